package dlqdemo

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// The demo's permission-sensitive item type (accounts.permission_grant) is
// requested by principals user:0 to user:39 (see samplePayload). Its owning
// service, for the demo, is this directory: the first 30 still hold
// accounts:grant, the last ten lost it. A replay of a revalidate item asks
// it, over NATS, whether the original principal may still have the effect.

// GrantHolders is how many of the demo's principals (user:0 on) still hold
// accounts:grant; the others (up to user:39) lost it.
const GrantHolders = 30

// demoPrincipals is how many principals the demo's payloads name.
const demoPrincipals = 40

// Revalidation is the demo directory's answer about a principal: allow, or
// why not.
func Revalidation(principal string) (allow bool, reason string) {
	n, err := strconv.Atoi(strings.TrimPrefix(principal, "user:"))
	switch {
	case !strings.HasPrefix(principal, "user:") || err != nil || n < 0 || n >= demoPrincipals:
		return false, fmt.Sprintf("%s is not in the demo directory", principal)
	case n >= GrantHolders:
		return false, fmt.Sprintf("%s lost accounts:grant (demo directory: only user:0 to user:%d hold it)", principal, GrantHolders-1)
	}
	return true, ""
}

// ServeRevalidation answers revalidation requests on subject from the demo
// directory (Revalidation) until the subscription is drained: a request is
// JSON with a "principal"; the answer is {"allow": true} or {"allow":
// false, "reason": "..."}. It is what `make run` points REVALIDATE_SUBJECT
// at, so revalidate replays work end to end locally.
func ServeRevalidation(nc *nats.Conn, subject string, log *slog.Logger) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var q struct {
			Principal string `json:"principal"`
			Tenant    string `json:"tenant"`
			MsgID     string `json:"msg_id"`
		}
		answer := map[string]any{"allow": false, "reason": "the request is not JSON with a principal"}
		if json.Unmarshal(m.Data, &q) == nil && q.Principal != "" {
			allow, reason := Revalidation(q.Principal)
			answer = map[string]any{"allow": allow}
			if !allow {
				answer["reason"] = reason
			}
		}
		body, _ := json.Marshal(answer) // a map of plain values always marshals
		if err := m.Respond(body); err != nil {
			log.Warn("demo revalidation: answer failed", "err", err)
			return
		}
		log.Info("demo revalidation", "tenant", q.Tenant, "msg_id", q.MsgID, "principal", q.Principal, "answer", answer["allow"])
	})
	if err != nil {
		return nil, fmt.Errorf("serve demo revalidation on %s: %w", subject, err)
	}
	return sub, nc.Flush()
}
