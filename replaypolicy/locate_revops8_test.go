package replaypolicy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevOps8InlineRuleProblemNamesItsLine: Parse accepts rules written as
// an inline array of inline tables as well as [[rule]] sections (tables()),
// and its errors promise "file: line N: where: what". For inline rules the
// locator records only the line of `rule = [`, so a problem in the third
// rule, three lines below, is reported on line 1: the operator is sent to
// the wrong line (and every inline rule's problem names the same one).
func TestRevOps8InlineRuleProblemNamesItsLine(t *testing.T) {
	t.Parallel()
	src := "rule = [\n" +
		"  {item_type = \"search.*\", class = \"rebuildable\"},\n" +
		"  {item_type = \"email.*\", class = \"same_operation\"},\n" +
		"  {item_type = \"orders.>\", class = \"manul\"},\n" +
		"]\n"
	_, err := Parse("p.toml", []byte(src))
	require.Error(t, err)
	var pe *PolicyError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, "rule 3", pe.Where, "%v", err)
	assert.Equal(t, 4, pe.Line, "the class \"manul\" is on line 4: %v", err)
}
