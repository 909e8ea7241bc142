package web

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"github.com/quarantine-console/quarantine"
	"github.com/quarantine-console/quarantine/audit"
	"github.com/quarantine-console/quarantine/authz"
	"github.com/quarantine-console/quarantine/dlq"
	"github.com/quarantine-console/quarantine/dlq/replay"
	"github.com/quarantine-console/quarantine/replaypolicy"
)

// Locator finds the tenants of what a request names: the object of its
// path (one tenant; a selection may span several), or the dead letters its
// form selects. The enforce middleware asks it before the handler runs.
type Locator struct {
	// Object is the kind of object, as the audit log names it.
	Object string
	// Param is the path parameter that names the object ("" when a form
	// selects dead letters).
	Param string
	// See is the permission that makes an object of a tenant visible: a
	// person without it in the object's tenant is answered as if there
	// were no such object. Objects outside any tenant (tenant "") are
	// visible to those who hold it in every tenant.
	See Permission
	// find returns the tenants of the object (not_found when there is
	// none), or for a selection the tenant of each id it names: absent
	// for an id of no dead letter.
	find func(c echo.Context) (map[string]string, error)
	// class, for the locator of one replay request, returns the request's
	// class: a route of the replay family (replayObjects) needs its action
	// on that class's replays (authz.ReplayObject), not on some class's.
	// Nil where what is found has no one class (a selection, a draft
	// batch of several requests): there the handler checks each class.
	class func(c echo.Context) (replaypolicy.Class, error)
	// hides, when not nil, reports whether what was found does not exist
	// for u although u sees its tenant (someone else's request never
	// submitted, for the locator of one replay request): answered as an object of a tenant u
	// may not see, before the route's own right is asked, so that a 403
	// naming the right never tells u it is there.
	hides func(c echo.Context, u authz.User) (bool, error)
}

// absent is the tenant a selection's locator gives an id of no dead
// letter. Every dead letter has a tenant (dlq.UnknownTenant when its
// producer named none), so "" stands for nothing else there.
const absent = ""

// sees reports whether u may see what lives in tenant under loc.
func (s *Server) sees(u authz.User, loc *Locator, tenant string) bool {
	if tenant == "" {
		return s.deps.Access.Scope(u, loc.See.Object, loc.See.Action, nil).All
	}
	return s.deps.Access.Can(u, tenant, loc.See.Object, loc.See.Action)
}

// holds reports whether u holds p in tenant: in every tenant for what is
// outside any tenant ("") or of all of them (authz.AllTenants).
func (s *Server) holds(u authz.User, tenant string, p Permission) bool {
	if tenant == "" || tenant == authz.AllTenants {
		return s.deps.Access.Scope(u, p.Object, p.Action, nil).All
	}
	return s.deps.Access.Can(u, tenant, p.Object, p.Action)
}

// locate applies r's tenancy to the request before its handler: an
// object of a tenant the caller may not see answers 404 and is audited as
// a denied attempt in every such tenant it spans (a selection of two
// tenants' dead letters: one row in each, so each tenant's auditors see
// it); dead letters of another tenant in a selection are audited as
// refused, once for the request, and left to the action, which only ever
// sees the caller's tenants.
func (s *Server) locate(c echo.Context, r Route) error {
	loc := r.Locate
	tenants, err := s.find(c, loc)
	if err != nil {
		return err
	}
	u := userOf(c)
	if r.Tenancy == ObjectTenant {
		found := slices.Compact(slices.Sorted(maps.Values(tenants))) // the object's tenants, each once
		unseen := slices.DeleteFunc(slices.Clone(found), func(tenant string) bool {
			return s.sees(u, loc, tenant)
		})
		if len(unseen) > 0 {
			return s.notFoundDeniedIn(c, unseen, loc.Object, c.Param(loc.Param))
		}
		if loc.hides != nil {
			hidden, err := loc.hides(c, u)
			if err != nil {
				return err
			}
			if hidden {
				return s.notFoundDeniedIn(c, found, loc.Object, c.Param(loc.Param))
			}
		}
		// The route's own right, in the object's tenant, on the request's
		// class for a route of the replay family: the gate let through
		// whoever holds it somewhere, and a handler's check is then a
		// second one, not the only one (a route whose handler forgot it
		// stays closed to a person with the right in another tenant, or
		// on another class, only).
		if r.Access != AccessPerm || r.Perm == loc.See {
			return nil
		}
		need := r.Perm
		if need.Object == replayObjects {
			if loc.class == nil {
				return nil // several classes: the handler's to check, each
			}
			class, err := loc.class(c)
			if err != nil {
				return err
			}
			need.Object = authz.ReplayObject(string(class))
		}
		for _, tenant := range found {
			if !s.holds(u, tenant, need) {
				return s.deny(c, tenant, need.Object+":"+need.Action, loc.Object+" "+c.Param(loc.Param))
			}
		}
		return nil
	}
	refused := map[string]string{} // tenant by id, of the ids the caller may not see
	for id, tenant := range tenants {
		if tenant == absent {
			continue // of no dead letter: the action's to answer
		}
		if !s.sees(u, loc, tenant) {
			refused[id] = tenant
		}
	}
	if len(refused) > 0 {
		events := s.selectedEvents(c, "authz.denied", refused, "in a tenant outside the caller's scope; left out")
		if _, err := audit.AppendBatchFunc(c.Request().Context(), s.deps.Pool, events); err != nil {
			return fmt.Errorf("audit refused selection: %w", err)
		}
	}
	return nil
}

// find returns what loc finds of the request of c (Locator.find), read
// whether or not the client still waits for the answer (audit.Detached,
// bounded by audit.RecordTimeout): it decides whether the request is an
// attempt on another tenant's object, which is recorded for that tenant's
// auditors even when the client hung up at once (with the request's
// context the read was cancelled, a 500 nobody received, and no row).
func (s *Server) find(c echo.Context, loc *Locator) (map[string]string, error) {
	req := c.Request()
	ctx, cancel := audit.Detached(req.Context())
	defer func() { cancel(); c.SetRequest(req) }()
	c.SetRequest(req.WithContext(ctx))
	return loc.find(c)
}

// tried are the denied rows (action, why) of a request of r refused
// before its locator applied r's tenancy, naming what the request names,
// whatever the caller may see: its object, once in each tenant the object
// spans, or the ids its form selects, one row per tenant naming that
// tenant's dead letters (selectedEvents). Each row is that tenant's, for
// its auditors to see, as notFoundDenied's is. None when r names nothing,
// or its object is not found: the caller records the request's path
// instead. What is found never changes the answer, so the answer says
// nothing of what exists.
func (s *Server) tried(c echo.Context, r Route, action, why string) []audit.Event {
	loc := r.Locate
	if loc == nil {
		return nil
	}
	found, err := s.find(c, loc)
	if err != nil {
		if quarantine.ErrorCode(err) == quarantine.EINTERNAL {
			s.deps.Log.Error("find what a refused request names", "err", err,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		}
		return nil
	}
	if r.Tenancy == SelectedTenants {
		return s.selectedEvents(c, action, found, why)
	}
	var events []audit.Event
	for _, tenant := range slices.Compact(slices.Sorted(maps.Values(found))) {
		e := s.event(c, action, audit.OutcomeDenied)
		e.Tenant, e.ObjectType, e.ObjectID, e.Reason = tenant, loc.Object, c.Param(loc.Param), why
		events = append(events, e)
	}
	return events
}

// selectedEvents are the denied rows (action, why) of a refused
// selection, as its locator found it (tenant by id): dlq.RefusedIDs.Events,
// the one form of a refused selection's rows, one per tenant naming only
// that tenant's dead letters (its first ids in object_id, the count in
// the reason, up to 1,000 ids in after), so that each tenant's auditors
// see what was tried on its dead letters and nothing of another's; and
// one outside any tenant naming the ids of no dead letter, if any. Those
// are no tenant's: a tenant's row that named them would tell its auditors
// that no tenant has such a dead letter, something of other tenants' ids.
// Outside any tenant is where a probe that names nothing found is
// recorded, for the auditors of every tenant.
func (s *Server) selectedEvents(c echo.Context, action string, found map[string]string, why string) []audit.Event {
	refused := dlq.RefusedIDs{}
	for key, tenant := range found {
		id, err := strconv.ParseInt(key, 10, 64)
		if err != nil {
			continue // selectionLocator's keys are ids it formatted
		}
		if tenant == absent {
			refused.Add(id, "", why+"; no dead letter has these ids")
		} else {
			refused.Add(id, tenant, why)
		}
	}
	return refused.Events(s.event(c, action, audit.OutcomeDenied))
}

// one is the tenant of an object, as a locator answers it.
func one(key, tenant string) map[string]string { return map[string]string{key: tenant} }

// deadLetterLocator finds the dead letter of the :id parameter.
func (s *Server) deadLetterLocator() *Locator {
	return &Locator{Object: deadLetterAuditType, Param: "id", See: Permission{authz.ObjDeadLetter, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			id, ok := deadLetterID(c)
			if !ok {
				return nil, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
			}
			tenant, err := s.deps.DeadLetters.TenantOf(c.Request().Context(), id)
			return one("", tenant), err
		}}
}

// deadLetterPageLocator finds the dead letter of the :id parameter for its
// page: it reads the dead letter and what else the page shows of it that
// does not depend on what it holds in one round trip (readDeadLetterPage),
// for the handler to show once located (deadLetterFound).
func (s *Server) deadLetterPageLocator() *Locator {
	return &Locator{Object: deadLetterAuditType, Param: "id", See: Permission{authz.ObjDeadLetter, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			id, ok := deadLetterID(c)
			if !ok {
				return nil, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such dead letter.")
			}
			f, err := s.readDeadLetterPage(c.Request().Context(), id)
			if err != nil {
				return nil, err
			}
			c.Set(ctxFoundDeadLetter, f)
			return one("", f.deadLetter.Tenant), nil
		}}
}

// readDeadLetterPage reads dead letter id as its page shows it (Preview:
// its long values cut), whatever its tenant, with the replay requests that
// name it and what became of it in each, the rules' verdict on replaying it
// now, its replay chain, the fixes that cover it, the active retention
// terms and the request that keeps it from them: one round trip.
func (s *Server) readDeadLetterPage(ctx context.Context, id int64) (*foundDeadLetter, error) {
	f := &foundDeadLetter{}
	d, err := s.deps.DeadLetters.Preview(ctx, id, func(b *pgx.Batch, lo, hi time.Time) {
		s.deps.Replays.QueueRequestsFor(b, id, &f.requests)
		s.deps.Replays.QueueItemOf(b, id, &f.items)
		s.deps.Replays.QueueJudge(b, id, lo, hi, &f.verdict, &f.judged)
		dlq.QueueChain(b, id, "", lo, hi, &f.chain)
		dlq.QueueFixesFor(b, id, lo, hi, maxShownFixes, &f.fixes)
		dlq.QueueActiveTerms(b, &f.activeTerms)        // whose retention the page tells
		dlq.QueueRetentionHold(b, id, lo, hi, &f.hold) // and the request that keeps it, by the keeper's rule
	})
	if err != nil {
		return nil, err
	}
	f.deadLetter = d
	return f, nil
}

// generation is the generation the replay rules judge the dead letter by:
// the one its verdict was judged at (the linked one, or more when the
// replay ledger holds more replays of its message: a consumer that drops
// Dlq-Replay-Of), else the one ingest linked. The page's class and its
// Replay button follow it, so the page says the class a draft of it gets
// (TestRevOncall20DeadLetterPageClassIgnoresLedgerGeneration).
func (f *foundDeadLetter) generation() int {
	g := int(f.deadLetter.Generation)
	if f.judged {
		g = max(g, f.verdict.Classing.Generation)
	}
	return g
}

// foundDeadLetter is what readDeadLetterPage read.
type foundDeadLetter struct {
	deadLetter  dlq.Detail
	requests    []replay.Request
	items       map[int64]replay.Item // by request
	verdict     replaypolicy.Verdict
	judged      bool
	chain       dlq.ReplayChain
	fixes       []dlq.Fix
	activeTerms dlq.TermsActivation
	hold        dlq.RetentionHold
}

const ctxFoundDeadLetter = "quarantine.deadletter"

// deadLetterFound returns what the route's locator read, if it did.
func deadLetterFound(c echo.Context) (*foundDeadLetter, bool) {
	f, ok := c.Get(ctxFoundDeadLetter).(*foundDeadLetter)
	return f, ok
}

// selectionLocator finds the dead letters a form selects: the tenant of
// each id, absent for an id of no dead letter (the action's to answer, as
// a selection that is not a list of ids is, which finds nothing).
func (s *Server) selectionLocator() *Locator {
	return &Locator{Object: deadLetterAuditType, See: Permission{authz.ObjDeadLetter, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			form, err := c.FormParams()
			if err != nil {
				return nil, nil
			}
			ids, err := readSelection(form).Validate()
			if err != nil || len(ids) == 0 {
				return nil, nil
			}
			byID, err := s.deps.DeadLetters.TenantsOf(c.Request().Context(), ids)
			if err != nil {
				return nil, err
			}
			out := make(map[string]string, len(ids))
			for _, id := range ids {
				out[strconv.FormatInt(id, 10)] = byID[id] // absent when none has it
			}
			return out, nil
		}}
}

// requestLocator finds the replay request of the :id parameter: its
// tenant, and its class for a route of the replay family, of one read
// (foundRequest).
func (s *Server) requestLocator() *Locator {
	return &Locator{Object: "replay_request", Param: "id", See: Permission{authz.ObjDeadLetter, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			req, err := s.foundRequest(c)
			return one("", req.Tenant), err
		},
		class: func(c echo.Context) (replaypolicy.Class, error) {
			req, err := s.foundRequest(c)
			return req.Class, err
		},
		hides: func(c echo.Context, u authz.User) (bool, error) {
			req, err := s.foundRequest(c)
			return err == nil && req.HiddenFrom(u.Actor), err
		}}
}

const ctxFoundRequest = "quarantine.replay_request"

// foundRequest returns the replay request of the :id parameter, read once
// for the request of c (the locator's find, then its class), or not_found.
func (s *Server) foundRequest(c echo.Context) (replay.Request, error) {
	if req, ok := c.Get(ctxFoundRequest).(replay.Request); ok {
		return req, nil
	}
	id, err := requestID(c)
	if err != nil {
		return replay.Request{}, err
	}
	req, err := s.deps.Replays.Request(c.Request().Context(), id)
	if err != nil {
		return replay.Request{}, err
	}
	c.Set(ctxFoundRequest, req)
	return req, nil
}

// batchLocator finds the selection (draft batch) of the :batch parameter:
// one tenant or several. A parameter that is not text (dlq.StorableText:
// %00, %FF in the path) names no selection; PostgreSQL would refuse it.
func (s *Server) batchLocator() *Locator {
	return &Locator{Object: "replay_batch", Param: "batch", See: Permission{authz.ObjDeadLetter, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			if !dlq.StorableText(c.Param("batch")) {
				return nil, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such selection.")
			}
			tenants, err := s.deps.Replays.BatchTenants(c.Request().Context(), c.Param("batch"))
			out := map[string]string{}
			for _, t := range tenants {
				out[t] = t
			}
			return out, err
		}}
}

// auditLocator finds the audit entry of the :seq parameter.
func (s *Server) auditLocator() *Locator {
	return &Locator{Object: "audit_entry", Param: "seq", See: Permission{authz.ObjAudit, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			seq, ok := pathID(c, "seq")
			if !ok {
				return nil, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such audit event.")
			}
			tenant, err := audit.TenantOf(c.Request().Context(), s.deps.Pool, seq)
			return one("", tenant), err
		}}
}

// bindingLocator finds the role binding of the :id parameter; a binding
// for every tenant lives outside any one.
func (s *Server) bindingLocator() *Locator {
	return &Locator{Object: "role_binding", Param: "id", See: Permission{authz.ObjBindings, authz.ActRead},
		find: func(c echo.Context) (map[string]string, error) {
			id, ok := pathID(c, "id")
			if !ok {
				return nil, quarantine.Errorf(quarantine.ENOTFOUND, "There is no such binding.")
			}
			b, err := s.deps.Bindings.Get(c.Request().Context(), id)
			if b.Tenant == authz.AllTenants {
				b.Tenant = ""
			}
			return one("", b.Tenant), err
		}}
}
