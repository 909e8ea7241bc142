package web

import (
	"net/url"
	"strings"
	"testing"

	"github.com/quarantine-console/quarantine/audit"
)

// TestFixAudit11MessageLinkOfALongID: an entry's message link lists the
// dead letters of its message id; an id longer than an audit row holds is
// stored as its key, which no dead letter's id equals, and links to the
// audit log's Message filter in the entry's tenant instead (which compares
// keys), never to a dead letter list filtered on the key.
func TestFixAudit11MessageLinkOfALongID(t *testing.T) {
	short := messageURL(audit.Entry{MessageID: "order-1", Tenant: "acme"})
	if short != "/deadletters?msg_id=order-1&tenant=acme" {
		t.Errorf("short id: %q", short)
	}
	key := audit.MessageKey("order-" + strings.Repeat("0123456789", 60))
	long := messageURL(audit.Entry{MessageID: key, Tenant: "acme"})
	u, err := url.Parse(long)
	if err != nil || u.Path != "/audit" || u.Query().Get("message_id") != key || u.Query().Get("tenant") != "acme" {
		t.Errorf("long id: %q (%v)", long, err)
	}
	if got := audit.MessageKey(key); got != key {
		t.Errorf("a key filters as itself: %q", got)
	}
}
