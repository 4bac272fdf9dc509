package chat_test

import (
	"context"
	"slices"
	"testing"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/messages"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

func TestRegion(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	r, err := chat.OpenRegion(chat.RegionOptions{Name: "eu", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []contract.Participant) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Service())
		}
		return out
	}
	if got := names(r.Participants()); !slices.Equal(got, chat.ServiceNames) {
		t.Fatalf("Participants %v", got)
	}
	if got := names(r.ParticipantsFor(chat.KindConversation)); !slices.Equal(got, []string{"conversations", "messages", "reactions", "readstate"}) {
		t.Fatalf("ParticipantsFor(conv) %v", got)
	}
	if got := names(r.ParticipantsFor(chat.KindMedia)); !slices.Equal(got, []string{"media"}) {
		t.Fatalf("ParticipantsFor(media) %v", got)
	}
	for _, kind := range []string{chat.KindConversation, chat.KindMedia, "other"} {
		if got, want := chat.ServicesFor(kind), names(r.ParticipantsFor(kind)); !slices.Equal(got, want) || !slices.IsSorted(got) {
			t.Fatalf("ServicesFor(%q) = %v, ParticipantsFor names %v", kind, got, want)
		}
	}
	chat.ServicesFor(chat.KindMedia)[0] = "mutated" // the caller's copy
	if got := chat.ServicesFor(chat.KindMedia); !slices.Equal(got, []string{"media"}) {
		t.Fatalf("ServicesFor(media) after a caller's change = %v", got)
	}
	if p, ok := r.Participant("readstate"); !ok || p.Service() != "readstate" {
		t.Fatal("Participant(readstate)")
	}
	var allow kvrouting.Decision
	if _, err := r.Conversations().Create(ctx, allow, "c1", "title", "alice", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Messages().Post(ctx, allow, "c1", messages.Message{ID: "m1", Author: "alice", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	// A rejecting decision is the 423 whatever the service.
	rej := kvrouting.Decision{Outcome: kvrouting.Reject, Reason: kvrouting.ReasonLockedSecondary}
	if _, _, err := r.Messages().Post(ctx, rej, "c1", messages.Message{ID: "m2", Author: "alice", Text: "x"}); services.ToError(err).Code != contract.CodeLocked {
		t.Fatalf("post under Reject: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	// Reopened on the same directory, the data is there.
	r, err = chat.OpenRegion(chat.RegionOptions{Name: "eu", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := r.Messages().Get(ctx, "c1", "m1")
	if err != nil || m.Text != "hi" || m.Author != "alice" {
		t.Fatalf("after reopen: %+v, %v", m, err)
	}
	if ok, err := r.Conversations().IsMember(ctx, "c1", "alice"); !ok || err != nil {
		t.Fatalf("IsMember after reopen: %v, %v", ok, err)
	}
	if _, err := chat.OpenRegion(chat.RegionOptions{Name: "x"}); err == nil {
		t.Fatal("OpenRegion without Dir or InMemory succeeded")
	}
}
