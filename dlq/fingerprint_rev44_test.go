package dlq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRev44CauseLineIsFoundByItsLineStart: javaCauseAt judges each line
// with "Caused by: " in it once, by the line's start (review round 44: a
// line of thousands of them cost the square of its length, judged match by
// match). The cause it finds is the one it found before: the last line
// that starts with it, no further right than the trace's first line, and
// a line that merely mentions it, once or many times, is none.
func TestRev44CauseLineIsFoundByItsLineStart(t *testing.T) {
	repeated := strings.Repeat("Caused by: ", 5000)
	twoCauses := "W: w\n\tat a.B.c(B.java:1)\nCaused by: E1: a\n\tat a.B.d(B.java:2)\nCaused by: E2: b\n\tat a.B.e(B.java:3)\n"
	for _, tc := range []struct {
		name, stack string
		want        int
	}{
		{"none", "java.lang.IllegalStateException: x\n\tat a.B.c(B.java:1)\n", -1},
		{"last cause", twoCauses, strings.Index(twoCauses, "Caused by: E2")},
		{"a mention after the last cause", "W: w\nCaused by: E1: a\n\tat x.Y.z(Y.java:9) said Caused by: nothing\n", 5},
		{"mentions only", "W: Caused by: a Caused by: b\n\tat a.B.c(B.java:1) Caused by: c\n", -1},
		{"a line of mentions", "W: w\n" + "x" + repeated + "\n", -1},
		{"a line starting with many", "W: w\n" + repeated + "\n\tat a.B.c(B.java:1)\n", 5},
		{"indented by the trace", "  W: w\n  Caused by: E: a\n", 7},
		{"indented further: suppressed", "W: w\n\tSuppressed: S: s\n\t\tCaused by: E: a\n", -1},
		{"one line, no newline", repeated, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, javaCauseAt(tc.stack))
		})
	}
	// Two stacks of one wrapper whose causes differ only on a line that
	// mentions a cause many times are still one group with it, not two.
	a := "W: w\n\tat a.B.c(B.java:1)\nCaused by: E: a\n\tat a.B.d(B.java:2)\n"
	assert.Equal(t, Fingerprint(ClassTransient, "w", a), Fingerprint(ClassTransient, "w", a+"x"+repeated+"\n"))
}

// BenchmarkFingerprintHostileStacks: the fingerprint of one dead letter
// whose Dlq-Stack is about 60 KB (what fits in a NATS header block) of one
// shape a hostile producer may send: one line of "Caused by: " repeated,
// with something before it or not, and an ordinary Java trace of that
// size for comparison.
func BenchmarkFingerprintHostileStacks(b *testing.B) {
	const size = 60 << 10
	for _, tc := range []struct{ name, stack string }{
		{"one-line-of-causes", strings.Repeat("Caused by: ", size/11)},
		{"one-line-mentioning-causes", "x" + strings.Repeat("Caused by: ", size/11)},
		{"java-frames", "W: w\n" + strings.Repeat("\tat com.example.Foo.bar(Foo.java:12)\n", size/37)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				Fingerprint(ClassTransient, "boom", tc.stack)
			}
			b.ReportMetric(float64(len(tc.stack)), "stack-bytes")
		})
	}
}
