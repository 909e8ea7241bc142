package views

import (
	"strings"
	"testing"
	"time"
)

// TestRev34StreamAdviceNamesTheSettingFirst: with DLQ_MAX_AGE at 720h and
// closed dead letters removed after 7 days, the dashboard said to run
// "nats stream edit DLQ --max-age 168h"; the console then raised the
// stream's limit back to the setting at its next check, and alerted on a
// stream changed by hand, and the warning stayed. The advice names the
// setting first where it is longer; without one it does not. Either way
// it says that JetStream discards older messages stored or not, so the
// limit must outlast an outage.
func TestRev34StreamAdviceNamesTheSettingFirst(t *testing.T) {
	t.Parallel()
	week, month := 7*24*time.Hour, 30*24*time.Hour
	set := StreamView{Known: true, Name: "DLQ", MaxAge: month, Setting: month, Shortest: week}.KeepsLonger()
	for _, want := range []string{"First set DLQ_MAX_AGE of every console to at most 168h and restart them", "it is 720h now", "nats stream edit DLQ --max-age 168h", "outage"} {
		if !strings.Contains(set, want) {
			t.Errorf("KeepsLonger() = %q, want it to contain %q", set, want)
		}
	}
	unset := StreamView{Known: true, Name: "DLQ", MaxAge: month, Shortest: week}.KeepsLonger()
	if strings.Contains(unset, "DLQ_MAX_AGE to at most") || !strings.Contains(unset, "nats stream edit DLQ --max-age 168h") {
		t.Errorf("KeepsLonger() without the setting = %q: the stream edit alone", unset)
	}
	if got := (StreamView{Known: true, Name: "DLQ", MaxAge: week, Setting: week, Shortest: week}).KeepsLonger(); got != "" {
		t.Errorf("KeepsLonger() within retention = %q, want none", got)
	}
}
