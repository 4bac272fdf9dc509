package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/messages"
)

// TestTable4 drives paper 001 Table 4 (DESIGN.md "Fencing by operation
// class") through the HTTP API: for each lock state at the primary, and at
// the locked secondary, each operation class gets its expected status. The
// routing lock alone decides here (no store fence is set), so a delete under
// the hard-delete lock must still become a tombstone.
func TestTable4(t *testing.T) {
	e := newEnv(t, envOptions{})
	type row struct {
		read, update, newWrite, delete int
		deleteKind                     string // X-Cutover-Delete of a 204
	}
	allowAll := row{200, 200, 201, 204, "hard"}
	refuse := row{200, 423, 423, 423, ""}
	cases := []struct {
		state              string
		primary, secondary row
	}{
		// With no lock there is no secondary: region-b is not authoritative.
		{"none", allowAll, refuse},
		{"pre", allowAll, refuse},
		{"hard-delete", row{200, 200, 201, 204, "tombstone"}, refuse},
		{"write", refuse, refuse},
	}
	for _, tc := range cases {
		t.Run(tc.state, func(t *testing.T) {
			e.t = t
			conv := "t4-" + tc.state
			e.createConv(conv, "alice", "bob")
			for _, id := range []string{"m-edit", "m-del-a", "m-del-b"} {
				e.post(conv, "alice", id, "text of "+id)
			}
			// The target holds a historical copy, so reads there find data.
			e.copyAll(chat.ConvResource(conv), regionA, regionB, 1, nil, 0)
			e.lockTo(convRes(conv), regionB, tc.state)

			for _, at := range []struct {
				name, region string
				want         row
			}{{"primary", "", tc.primary}, {"secondary", regionB, tc.secondary}} {
				t.Run(at.name, func(t *testing.T) {
					e.t = t
					base := "/v1/conversations/" + conv + "/messages"
					before := e.messages(conv, "alice", at.region)

					e.must(e.do(req{method: "GET", path: base + "/m-edit", auth: user("alice"), region: at.region}), at.want.read)

					r := e.must(e.do(req{method: "PATCH", path: base + "/m-edit", auth: user("alice"), region: at.region,
						body: map[string]string{"text": "edited at " + at.name}}), at.want.update)
					if r.status == http.StatusOK {
						var m message
						r.decode(t, &m)
						if m.Text != "edited at "+at.name || m.EditedAt == "" {
							t.Fatalf("edit returned %+v", m)
						}
					}

					newID := "m-new-" + at.name
					e.must(e.do(req{method: "POST", path: base, auth: user("bob"), region: at.region,
						body: map[string]string{"id": newID, "text": "new"}}), at.want.newWrite)

					del := map[string]string{"primary": "m-del-a", "secondary": "m-del-b"}[at.name]
					r = e.must(e.do(req{method: "DELETE", path: base + "/" + del, auth: user("alice"), region: at.region}), at.want.delete)
					if got := r.header.Get("X-Cutover-Delete"); got != at.want.deleteKind {
						t.Fatalf("X-Cutover-Delete %q, want %q", got, at.want.deleteKind)
					}

					after := e.messages(conv, "alice", at.region)
					if at.want.newWrite == http.StatusLocked {
						// Refused operations change nothing (Table 4: the
						// decision is taken before any storage mutation).
						if !slices.EqualFunc(before, after, func(a, b message) bool { return a.ID == b.ID && a.Text == b.Text }) {
							t.Fatalf("refused operations changed the conversation:\nbefore %v\nafter  %v", before, after)
						}
						return
					}
					if got := ids(after); slices.Contains(got, del) || !slices.Contains(got, newID) {
						t.Fatalf("messages after the operations: %q", got)
					}
					// Either way the content is gone and the id stays reserved
					// as a stripped tombstone.
					rec, found := e.storedRecord(regionA, messages.ServiceName, chat.ConvResource(conv), del)
					if !found || !rec.Deleted || rec.Data != nil || rec.Refs != nil {
						t.Fatalf("deleted message left %+v (found %v), want a stripped tombstone", rec, found)
					}
				})
			}
		})
	}
	e.t = t
}

// TestTable4Reactions checks the two other delete-class operations of the
// chat API under the hard-delete lock: un-react is tombstoned, and the user
// can react again although the reaction's id carries a tombstone.
func TestTable4Reactions(t *testing.T) {
	e := newEnv(t, envOptions{})
	conv := "t4r"
	e.createConv(conv, "alice", "bob")
	e.post(conv, "alice", "m1", "hello")
	path := "/v1/conversations/" + conv + "/messages/m1/reactions/"
	e.must(e.do(req{method: "PUT", path: path + "thumbsup", auth: user("bob")}), 200)
	e.lockTo(convRes(conv), regionB, "hard-delete")

	r := e.must(e.do(req{method: "DELETE", path: path + "thumbsup", auth: user("bob")}), 204)
	if r.header.Get("X-Cutover-Delete") != "tombstone" {
		t.Fatalf("un-react under the hard-delete lock: X-Cutover-Delete %q", r.header.Get("X-Cutover-Delete"))
	}
	var rs struct {
		Reactions []struct{ User, Emoji string } `json:"reactions"`
	}
	e.must(e.do(req{method: "PUT", path: path + "thumbsup", auth: user("bob")}), 200).decode(t, &rs)
	if len(rs.Reactions) != 1 || rs.Reactions[0].User != "bob" {
		t.Fatalf("re-react after a tombstoned un-react: %+v", rs)
	}
	e.must(e.do(req{method: "PUT", path: path + "thumbsup", auth: user("bob")}), 200).decode(t, &rs)
	if len(rs.Reactions) != 1 {
		t.Fatalf("reacting twice recorded %d reactions", len(rs.Reactions))
	}
	e.must(e.do(req{method: "DELETE", path: path + "thumbsup", auth: user("bob")}), 204)
	e.must(e.do(req{method: "DELETE", path: path + "thumbsup", auth: user("bob")}), 404)

	// Deleting a message under the hard-delete lock tombstones its reactions
	// too, so they cannot come back at the target either.
	e.must(e.do(req{method: "PUT", path: path + "heart", auth: user("bob")}), 200)
	e.must(e.do(req{method: "DELETE", path: "/v1/conversations/" + conv + "/messages/m1", auth: user("alice")}), 204)
	tok, _ := e.storedRecord(regionA, "reactions", chat.ConvResource(conv), "m1:bob:heart")
	if !tok.Deleted {
		t.Fatalf("reaction of a message deleted under the hard-delete lock: %+v, want a tombstone", tok)
	}
}
