package dlq

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRev42ErrorBodiesGroupByWhatTheySay: an error whose text is a
// response body (JSON, or a Python dict) says what went wrong in its keys
// and the quoted values of keys such as error, code and message. Two such
// errors of one endpoint that say different things are two groups; the
// same one with other ids, numbers, amounts, users or addresses is one. A
// value quoted elsewhere still does not split a group.
func TestRev42ErrorBodiesGroupByWhatTheySay(t *testing.T) {
	t.Parallel()
	group := func(msg string) string { return Fingerprint(ClassPermanent, msg, "") }
	split := [][2]string{
		{`{"error":"payment declined"}`, `{"error":"tenant suspended"}`},
		{`POST https://api.pay/v1/charges: 402 {"error":{"code":"card_declined","message":"Your card was declined."}}`,
			`POST https://api.pay/v1/charges: 409 {"error":{"code":"idempotency_key_in_use","message":"Another request with this key is in progress."}}`},
		{`HTTPError: {'code': 'card_declined'}`, `HTTPError: {'code': 'expired_card'}`},
		{`{"title": "Not Found", "detail": "no such customer"}`, `{"title": "Not Found", "detail": "no such invoice"}`},
	}
	for _, p := range split {
		assert.NotEqual(t, group(p[0]), group(p[1]), "%s\n%s\nare one group: %q", p[0], p[1], NormaliseMessage(p[0]))
	}
	same := [][2]string{
		{`{"error":"order 7781 not found","request_id":"req_8f2a91"}`, `{"error":"order 12 not found","request_id":"req_0b77c3"}`},
		{`POST https://api.pay/v1/charges: 402 {"error":{"code":"card_declined","charge":"ch_3Nx1"}}`,
			`POST https://api.pay/v1/charges: 402 {"error":{"code":"card_declined","charge":"ch_9Qa7"}}`},
		{`{"amount": 1250, "error": "limit exceeded"}`, `{"amount": 99, "error": "limit exceeded"}`},
		{`user "alice" has no 'quota'`, `user "bob" has no 'plan'`},
		{`{"error":"forbidden","user":"alice"}`, `{"error":"forbidden","user":"bob"}`},
		{`{'detail': 'no such customer', 'email': 'alice@example.com'}`, `{'detail': 'no such customer', 'email': 'bob@example.org'}`},
		{`{"Error": {"Code": "AccessDenied", "Resource": "arn:aws:s3:::reports"}}`, `{"Error": {"Code": "AccessDenied", "Resource": "arn:aws:s3:::invoices"}}`},
		// A quoted operand before a colon is no key: Go's fmt.Errorf("%q: %w").
		{`load user "alice": not found`, `load user "bob": not found`},
		{`open "/srv/data/alice/report.csv": no such file or directory`, `open "/srv/data/bob/report.csv": no such file or directory`},
		{`lookup "orders-primary.internal": no such host`, `lookup "billing-replica.internal": no such host`},
		{`{"errors":{"alice@example.com":"mailbox full"}}`, `{"errors":{"bob@example.org":"mailbox full"}}`},
		{`KeyError: 'amount'`, `KeyError: 'sku'`},
		{`expected one of ["a", "b"]`, `expected one of ["c", "d"]`},
	}
	for _, p := range same {
		assert.Equal(t, group(p[0]), group(p[1]), "%s\n%s\nare two groups: %q / %q", p[0], p[1], NormaliseMessage(p[0]), NormaliseMessage(p[1]))
	}
	assert.Equal(t, `post https://api.pay/<#>/charges: <#> {"error":{"code":"card_declined","message":"your card was declined."}}`,
		NormaliseMessage(`POST https://api.pay/v1/charges: 402 {"error":{"code":"card_declined","message":"Your card was declined."}}`))
}
