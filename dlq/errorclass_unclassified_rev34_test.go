package dlq_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/dlq"
)

// TestRev34UnclassifiedAsTheContractSpellsIt: the contract takes
// Dlq-Error-Class "unclassified" (the producer saying it does not know)
// and flags only another spelling of it; the exact value was flagged
// spelling:error_class and the dead letter stored as malformed, with a
// reason telling the producer to spell it as it had.
func TestRev34UnclassifiedAsTheContractSpellsIt(t *testing.T) {
	t.Parallel()
	parse := func(class string) dlq.Record {
		return dlq.ParseDLQ("dlq", dlq.Received{
			Subject: "dlq.acme.search.index_update",
			Header: map[string][]string{
				dlq.HeaderOriginalSubject: {"app.acme.search.index_update"},
				dlq.HeaderOriginalMsgID:   {"msg-1"},
				dlq.HeaderErrorClass:      {class},
			},
			Data:   []byte(`{"doc":1}`),
			Stream: "DLQ", Seq: 7, Time: time.Now().Add(-time.Hour),
		})
	}
	rec := parse("unclassified")
	assert.Equal(t, dlq.ClassUnclassified, rec.ErrorClass)
	assert.NotContains(t, rec.Flags, "spelling:error_class", "spelt as the contract does")
	assert.False(t, rec.Malformed(), "%v", rec.MalformedReasons)
	other := parse("UNCLASSIFIED")
	assert.Equal(t, dlq.ClassUnclassified, other.ErrorClass)
	assert.Contains(t, other.Flags, "spelling:error_class", "another spelling is flagged")
}
