package replaypolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine"
)

// TestLead15KnowsAsRequester: the request knows the actor for its
// requester when the requester, as recorded, as now or under an address
// they acted with, is the actor as signed in; not when only the other
// names of the actor's own account (an address their account has now, or a
// link through it) make them one, which MayApprove still blocks.
func TestLead15KnowsAsRequester(t *testing.T) {
	t.Parallel()
	ann := quarantine.Actor{Issuer: "https://idp.example", Subject: "ann", Email: "ann@example.com", EmailVerified: true}
	bob := quarantine.Actor{Issuer: "https://idp.example", Subject: "bob", Email: "bob@example.com", EmailVerified: true}
	bobAsAnn := bob
	bobAsAnn.Email = ann.Email
	annAsBob := ann
	annAsBob.Email = bob.Email
	linker := quarantine.Actor{Issuer: "https://other.example", Subject: "l", Email: bob.Email, EmailVerified: true}
	linkerAnn := linker
	linkerAnn.Email = ann.Email

	for _, tc := range []struct {
		name    string
		req     Request
		knows   bool
		blocked bool
	}{
		{"the requester", Request{Requester: bob}, true, true},
		{"the requester's account has the actor's address now", Request{Requester: ann, RequesterNow: annAsBob}, true, true},
		{"the requester edited under the actor's address", Request{Requester: ann, KnownAs: []quarantine.Actor{annAsBob}}, true, true},
		{"the actor's own account has the requester's address", Request{Requester: ann, KnownAs: []quarantine.Actor{bobAsAnn}}, false, true},
		{"an outside account links the actor's address to the requester's", Request{Requester: ann, KnownAs: []quarantine.Actor{linker, linkerAnn}}, true, true},
		{"someone else", Request{Requester: ann}, false, false},
		{"links not all followed", Request{Requester: ann, KnownAs: []quarantine.Actor{Unfollowed}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.knows, KnowsAsRequester(tc.req, bob))
			assert.Equal(t, tc.blocked, MayApprove(tc.req, bob, quarantine.Actor{}).Outcome == Block)
		})
	}
}
