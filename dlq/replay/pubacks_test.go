package replay

import "testing"

func TestPubAcks(t *testing.T) {
	acked := func(stream string, seq uint64) *job { return &job{stream: stream, seq: seq} }
	for _, tc := range []struct {
		name string
		jobs []*job
		want string
	}{
		{"None", []*job{{}, {}}, "none"},
		{"One", []*job{acked("APP", 7)}, "APP:7"},
		{"Runs", []*job{acked("APP", 3), acked("APP", 1), acked("APP", 2), acked("APP", 5), {}, acked("APP", 7), acked("APP", 6)}, "APP:1-3,5-7"},
		{"Duplicates", []*job{acked("APP", 4), acked("APP", 4), acked("APP", 5)}, "APP:4-5"},
		{"Streams", []*job{acked("ORDERS", 9), acked("APP", 1), acked("ORDERS", 8)}, "APP:1 ORDERS:8-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pubAcks(tc.jobs); got != tc.want {
				t.Errorf("pubAcks = %q, want %q", got, tc.want)
			}
		})
	}
}
