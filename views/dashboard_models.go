package views

import (
	"fmt"
	"strconv"
	"time"
)

// Models of the dashboard: per tenant depth, age and arrivals, the arrivals
// chart and the biggest unresolved dimensions and groups.

// DashboardModel is the dashboard: per tenant depth, age and arrivals, the
// arrivals chart, unresolved counts by item type and error class, and the
// biggest error groups.
type DashboardModel struct {
	Now     time.Time
	Tenants []TenantSummaryRow
	// Total sums Tenants (its Tenant is empty; ListURL covers them all).
	Total TenantSummaryRow
	Chart ArrivalChart
	// ByItemType and ByErrorClass are unresolved counts, biggest first;
	// MoreItemTypes the item types with unresolved dead letters that
	// ByItemType leaves out (dlq.DashboardItemTypes).
	ByItemType    []DimensionRow
	MoreItemTypes DimensionMore
	ByErrorClass  []DimensionRow
	TopGroups     []GroupRow
	// Snoozed is the unresolved groups TopGroups leaves out as snoozed.
	Snoozed SnoozedHint
	// StaleAfter is the age past which the oldest unresolved dead letter is
	// shown red; StaleOptions the choices ("15m", "1h", ...), StaleValue the
	// chosen one.
	StaleAfter   time.Duration
	StaleValue   string
	StaleOptions []Option
	// SpanValue is "24h" or "7d"; SpanURLs link to each span.
	SpanValue string
	SpanURLs  map[string]string
	// Action is the path of the dashboard (the form and the poll target).
	Action string
	// Ingest is how far behind ingest is (the DLQ lag).
	Ingest IngestLagView
	// Replays is the replay requests of the tenants that went wrong.
	Replays ReplayAttention
	// Retention and Storage are how long dead letters are kept and where.
	Retention RetentionView
	Storage   StorageView
}

// ReplayAttention is the dashboard's line on the replay requests that
// went wrong: Reconcile have an item waiting for a person to reconcile
// it, Problems are done with problems (submitted in the last
// ProblemsDays days). Each count is at most Most+1 ("more than Most"),
// and links to the replays page filtered to those requests.
type ReplayAttention struct {
	Reconcile, Problems       int
	ReconcileURL, ProblemsURL string
	ProblemsDays              int
	Most                      int
}

// TenantSummaryRow is one tenant's line on the dashboard.
type TenantSummaryRow struct {
	Tenant     string
	Unresolved int64
	Total      int64
	// Oldest is when the oldest unresolved dead letter arrived (zero: none);
	// Stale says it is older than the dashboard's threshold.
	Oldest time.Time
	Stale  bool
	// OldestURL is the page of that dead letter (empty: none).
	OldestURL string
	LastHour  int64
	LastDay   int64
	// ListURL lists the tenant's unresolved dead letters.
	ListURL string
}

// ArrivalChart is the arrivals-per-hour bar chart, drawn as SVG.
type ArrivalChart struct {
	Title string
	Bars  []ChartBar
	// Max is the largest bar; Total the sum.
	Max   int64
	Total int64
}

// ChartBar is one hour of arrivals.
type ChartBar struct {
	Start time.Time
	N     int64
}

// DimensionRow is one item type or error class with its unresolved count.
type DimensionRow struct {
	Value      string
	Unresolved int64
	Total      int64
	// Share is Unresolved relative to the biggest row, 0 to 1.
	Share float64
	// URL lists the dead letters of this value.
	URL string
}

// DimensionMore is how many values with unresolved dead letters a
// dimension's card leaves out (N, 0 when none), and the page that lists
// them (URL).
type DimensionMore struct {
	N   int64
	URL string
}

func dashboardAction(m DashboardModel) string { return orDefault(m.Action, PathDashboard) }

// The chart's geometry: the bars are an SVG stretched to its box
// (preserveAspectRatio none), one 10-unit slot per hour and 100 units high;
// the axis labels are HTML around it, so that text is never stretched.

type chartRect struct {
	X, Y, W, H string
	Title      string
	Zero       bool
}

func chartViewBox(c ArrivalChart) string { return fmt.Sprintf("0 0 %d 100", max(1, len(c.Bars))*10) }

func chartWidth(c ArrivalChart) string { return strconv.Itoa(max(1, len(c.Bars)) * 10) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// chartBars lays out the bars: the tallest reaches 96 units (the top grid
// line), a bar that is not zero is at least 1.5 units tall.
func chartBars(c ArrivalChart) []chartRect {
	out := make([]chartRect, len(c.Bars))
	for i, b := range c.Bars {
		h := 0.0
		if c.Max > 0 {
			h = 96 * float64(b.N) / float64(c.Max)
		}
		if b.N > 0 && h < 1.5 {
			h = 1.5
		}
		out[i] = chartRect{
			X: strconv.Itoa(i*10 + 1), Y: f1(100 - h), W: "8", H: f1(h),
			Title: b.Start.UTC().Format("Jan 2 15:04") + " UTC: " + Count(b.N) + " arrived",
			Zero:  b.N == 0,
		}
	}
	return out
}

// chartXLabels labels six evenly spaced bars (the view lays them out in six
// equal columns): hours for a day, dates for longer spans, in UTC as the
// bars are (the axis says so, chartZone), each with its instant.
func chartXLabels(c ArrivalChart) []chartLabel {
	n := len(c.Bars)
	if n < 6 {
		return nil
	}
	out := make([]chartLabel, 0, 6)
	for k := range 6 {
		t := c.Bars[k*n/6].Start.UTC()
		l := chartLabel{DateTime: t.Format(time.RFC3339), Text: t.Format("15:04")}
		if n > 48 {
			l.Text = t.Format("Jan 2")
		}
		out = append(out, l)
	}
	return out
}

// chartLabel is a label of the chart's time axis: its text, in UTC, and
// the instant it marks (a person who shows times in their browser's zone
// reads it there on hover).
type chartLabel struct {
	Text, DateTime string
}

// chartZone is the zone of the chart's hours, on its time axis. The
// arrivals are counted per UTC hour (dead_letter_arrivals_tenant_hour), and a
// browser's zone is not always a whole hour from UTC (India, +05:30): its
// hours would cut the bars in two. So the chart stays in UTC, whatever the
// person's "Show times in", and says so where the hours are read.
const chartZone = "UTC"

// chartYLabels are the maximum, half of it and zero, top to bottom.
func chartYLabels(c ArrivalChart) []string {
	if c.Max == 0 {
		return []string{"", "", "0"}
	}
	return []string{compact(c.Max), compact(c.Max / 2), "0"}
}

// compact writes 1234 as "1.2k" and 2500000 as "2.5M".
func compact(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// shareWidth is a DimensionRow's bar width in a 100-unit SVG.
func shareWidth(s float64) string {
	if s <= 0 {
		return "0"
	}
	return f1(max(1.5, min(100, s*100)))
}
