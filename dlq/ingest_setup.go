package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// SetupWithin is Setup, tried again while JetStream cannot answer yet, for
// up to wait: a cluster electing its leaders (a node restarting, a quorum
// not yet formed) or a server too busy to answer within the client's
// timeout is not a reason for the console to exit. An answer that refuses
// what was asked (a stream whose subjects overlap another's, say, or a
// configuration the server never takes: replicas on a server that is not
// clustered, an age limit below the duplicate window, a size limit above
// its storage) ends it at once, naming the setting to change. So does a
// server or an account without JetStream (ErrJetStreamNotEnabled): no
// server answers the JetStream API then, which reads like a cluster with
// no leader yet, and only the account's own answer tells them apart
// (JetStreamEnabled).
func (in *Ingester) SetupWithin(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(time.Until(deadline), setupAttempt))
		err := in.Setup(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if mayBeNoJetStream(err) && JetStreamEnabled(ctx, in.js) != nil {
			return fmt.Errorf("%w: %w", ErrJetStreamNotEnabled, err) // what Setup met says more than the account's answer
		}
		if !jetStreamNotReady(err) {
			return err
		}
		if time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("%w (JetStream did not answer within %s, %d attempts)", err, wait, attempt)
		}
		in.log.Warn("waiting for JetStream", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// setupAttempt bounds one attempt of Setup (its calls wait for the
// context's deadline when it has one, not the client's timeout).
const setupAttempt = 15 * time.Second

// ErrJetStreamNotEnabled is JetStreamEnabled's answer (and so
// SetupWithin's) when the NATS server runs no JetStream or the account
// has none: the console cannot store a dead letter there, and waiting
// mends neither.
var ErrJetStreamNotEnabled = errors.New("JetStream is not enabled on this server (nats-server -js, or a jetstream {} block) or for this account (its jetstream limits)")

// jetStreamAsk bounds JetStreamEnabled's question: the client's own
// timeout for a JetStream call.
const jetStreamAsk = 5 * time.Second

// JetStreamEnabled asks js's account once, waiting up to 5 s for the
// answer, whether it has JetStream (its account info), and returns
// ErrJetStreamNotEnabled, with the answer, when the server says it has
// none (jetstream not enabled, 10076; not enabled for the account, 10039)
// or no server answers the JetStream API at all (no responders, which
// the client reads as the same). Any other outcome is nil, an error too
// (a timeout, a user not allowed $JS.API.INFO): it says nothing of
// JetStream being off. A server that runs no JetStream itself, in a
// cluster or as a leaf node whose JetStream servers are all down just
// then, is answered the same way as one with none anywhere: the NATS
// server the console is connected to cannot tell them apart either.
func JetStreamEnabled(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, jetStreamAsk)
	defer cancel()
	_, err := js.AccountInfo(ctx)
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return fmt.Errorf("%w: %w", ErrJetStreamNotEnabled, err)
	}
	return nil
}

// mayBeNoJetStream reports whether err, a failed Setup, may be JetStream
// off on the server or for the account (JetStreamEnabled asks): no
// server answered (no responders), or one answered that it is not
// enabled (10076, 10039, which come with a 503, as a cluster without a
// leader does).
func mayBeNoJetStream(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabled || api.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount
	}
	return errors.Is(err, nats.ErrNoResponders)
}

// jetStreamNotReady reports whether err is JetStream not answering, or
// answering that it cannot serve yet (5xx: no leader, cluster not
// available), rather than refusing the request. JetStream answers some
// refusals with a 5xx too (a stream configuration it will never take:
// refusedConfig); those are refusals.
func jetStreamNotReady(err error) bool {
	var api *jetstream.APIError
	switch {
	case errors.As(err, &api):
		return api.Code >= 500 && !refusedConfig[api.ErrorCode] || peerOffline(api)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrConnectionReconnecting):
		return true
	}
	return false
}

// peerOffline says api is JetStream unable to place a stream's replicas
// because a peer of the cluster is offline as its meta leader sees it
// (10005, "no suitable peers for placement, peer offline", a 400): a node
// restarting, or its heartbeat lagging on a loaded machine just after the
// cluster formed (the e2e cluster test met it at the console's start,
// CI133). It is waited for like a cluster without a leader; the other
// reasons 10005 gives (placement tags no peer has, fewer peers than
// replicas) stay refusals.
func peerOffline(api *jetstream.APIError) bool {
	return api.ErrorCode == errCodeNoSuitablePeers && strings.Contains(api.Description, "peer offline")
}

// errCodeNoSuitablePeers is JSClusterNoPeersErrF: "no suitable peers for
// placement" and why.
const errCodeNoSuitablePeers jetstream.ErrorCode = 10005

// JetStream API error codes (nats-server's errors.json) of a stream
// configuration the server refuses whatever the wait, most of them
// answered with a 5xx status. JSInsufficientResourcesErr (10023) is not
// one: a cluster answers it while a node with room for a replica is down.
const (
	errCodeClusterRequired      jetstream.ErrorCode = 10010 // "JetStream clustering support required"
	errCodeMemoryExceeded       jetstream.ErrorCode = 10028 // "insufficient memory resources available"
	errCodeClusterUnsupported   jetstream.ErrorCode = 10036 // "not currently supported in clustered mode"
	errCodeStorageExceeded      jetstream.ErrorCode = 10047 // "insufficient storage resources available"
	errCodeStreamInvalidConfig  jetstream.ErrorCode = 10052 // the configuration itself (a duplicate window over the age limit, ...)
	errCodeStreamLimits         jetstream.ErrorCode = 10053 // the account's limits (streams, storage)
	errCodeReplicasNotSupported jetstream.ErrorCode = 10074 // "replicas > 1 not supported in non-clustered mode"
)

// refusedConfig holds the codes above.
var refusedConfig = map[jetstream.ErrorCode]bool{
	errCodeClusterRequired: true, errCodeMemoryExceeded: true, errCodeClusterUnsupported: true, errCodeStorageExceeded: true,
	errCodeStreamInvalidConfig: true, errCodeStreamLimits: true, errCodeReplicasNotSupported: true,
}

// streamRefused is err, JetStream's answer to making or updating a stream
// of the console (want), with the setting that answer is about named when
// it is a refusal of the configuration: an operator reads what to change,
// not a JetStream error code. Other errors come back as they are.
func (in *Ingester) streamRefused(want jetstream.StreamConfig, err error) error {
	var api *jetstream.APIError
	if err == nil || !errors.As(err, &api) || !refusedConfig[api.ErrorCode] {
		return err // not ready, or a refusal that says what it is about (subjects overlapping another stream's, say)
	}
	dlqStream := want.Name == in.cfg.Stream
	var hint string
	switch {
	case api.ErrorCode == errCodeReplicasNotSupported || api.ErrorCode == errCodeClusterRequired:
		hint = fmt.Sprintf("DLQ_REPLICAS %d: the NATS server is not clustered and keeps one replica; set DLQ_REPLICAS to 1, or NATS_URL to a cluster of at least %[1]d servers", want.Replicas)
	case dlqStream && api.ErrorCode == errCodeStreamInvalidConfig && want.MaxAge > 0 && want.MaxAge < want.Duplicates:
		hint = fmt.Sprintf("DLQ_MAX_AGE %s: must be 0 or at least the stream's %s duplicate window", want.MaxAge, want.Duplicates)
	case dlqStream && (api.ErrorCode == errCodeStorageExceeded || api.ErrorCode == errCodeStreamLimits) && want.MaxBytes > 0:
		hint = fmt.Sprintf("DLQ_MAX_BYTES %d: more than the JetStream storage the server (or account) has left for it on each replica; lower DLQ_MAX_BYTES or give JetStream more storage", want.MaxBytes)
	case dlqStream:
		hint = fmt.Sprintf("check DLQ_REPLICAS %d, DLQ_MAX_AGE %s and DLQ_MAX_BYTES %d against the NATS server", want.Replicas, want.MaxAge, want.MaxBytes)
	case want.Name == in.cfg.AdvisoryStream:
		hint = fmt.Sprintf("check DLQ_REPLICAS %d and DLQ_WATCH_STREAMS against the NATS server", want.Replicas)
	default:
		return err
	}
	return fmt.Errorf("%w (JetStream refused stream %s: %s)", err, want.Name, hint)
}
