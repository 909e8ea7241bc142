package web_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/testfactory"
)

// TestRevPath28ItemPayloadNeedsDownloadInTheRequestsTenant: the payload a
// replay request will send for an item is the dead letter's payload, and
// downloading it needs "deadletter download" in the request's tenant, as
// the dead letter's own payload route does. A person who is viewer of acme
// (read only) and on-call of globex (download there) passes the route's
// gate (download somewhere) and reads acme's request page, but the item's
// payload is refused (403), its bytes are not sent, and no download is
// audited; an approver of acme gets it.
func TestRevPath28ItemPayloadNeedsDownloadInTheRequestsTenant(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	_, requester := b.SignIn(t, "acme:oncall")
	mixed, mixedUser := b.SignIn(t, "acme:viewer", "globex:oncall")
	approver, _ := b.SignIn(t, "acme:approver")
	id := testfactory.DeadLetter(t, b.Pool, testfactory.Letter{Tenant: "acme", ItemType: "orders.refund", MsgID: "rev28b-item-payload",
		Error: "boom", Payload: []byte(`{"card":"rev28b-secret-4111"}`)})
	req := testfactory.Request(t, b.Replays, requester.Actor, []int64{id}, replay.SubmitInput{})
	path := fmt.Sprintf("/replay/requests/%d", req.ID)

	page := b.Do(t, mixed, http.MethodGet, path, nil, nil)
	require.Equal(t, http.StatusOK, page.Status, "the request is theirs to read")

	resp := b.Do(t, mixed, http.MethodGet, fmt.Sprintf("%s/items/%d/payload", path, id), nil, nil)
	assert.Equal(t, http.StatusForbidden, resp.Status, "read is not download")
	assert.NotContains(t, resp.Body, "rev28b-secret-4111", "the payload is not sent")
	assert.Zero(t, b.AuditCount(t, "action = 'deadletter.download' AND actor_subject = $1", mixedUser.Subject), "no download happened")

	ok := b.Do(t, approver, http.MethodGet, fmt.Sprintf("%s/items/%d/payload", path, id), nil, nil)
	require.Equal(t, http.StatusOK, ok.Status, ok.Body)
	assert.Contains(t, ok.Body, "rev28b-secret-4111", "an approver of acme downloads what they review")
}
