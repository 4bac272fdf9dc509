package workload

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
)

// SizeClass is one class of a conversation size mix.
type SizeClass struct {
	Name     string
	Messages int
	Share    float64
}

// PaperMix is the size mix of paper 001 §6.3: 54 % of conversations hold
// ~10 messages, 39 % ~80, 7 % ~big (4,000 in the paper); big is the last.
func PaperMix(big int) []SizeClass {
	return []SizeClass{{"10", 10, 0.54}, {"80", 80, 0.39}, {fmt.Sprint(big), big, 0.07}}
}

// Conv is one conversation of a workload.
type Conv struct {
	ID    string
	Class string
	Size  int
}

// Assign makes n conversations "<prefix>-NNNN" in the classes of mix —
// round(share × n) each, at least one per class when n >= len(mix), the
// last class taking what is left — shuffled by seed. With jitter j > 0 each
// size is drawn uniformly from [size × (1-j), size × (1+j)] (at least 1).
func Assign(prefix string, n int, mix []SizeClass, seed uint64, jitter float64) []Conv {
	var out []Conv
	left := n
	for i, c := range mix {
		k := int(c.Share*float64(n) + 0.5)
		if i == len(mix)-1 {
			k = left
		}
		// Leave one for each class still to come.
		k = max(0, min(max(k, 1), left-(len(mix)-1-i)))
		for range k {
			out = append(out, Conv{Class: c.Name, Size: c.Messages})
		}
		left -= k
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		out[i].ID = fmt.Sprintf("%s-%04d", prefix, i)
		if jitter > 0 {
			lo := float64(out[i].Size) * (1 - jitter)
			out[i].Size = max(1, int(lo+rng.Float64()*2*jitter*float64(out[i].Size)))
		}
	}
	return out
}

// Messages is the number of messages convs hold once seeded.
func Messages(convs []Conv) int {
	n := 0
	for _, c := range convs {
		n += c.Size
	}
	return n
}

// ByClass counts convs per class name.
func ByClass(convs []Conv) map[string]int {
	out := map[string]int{}
	for _, c := range convs {
		out[c.Class]++
	}
	return out
}

// IDs are the conversations' ids.
func IDs(convs []Conv) []string {
	out := make([]string, len(convs))
	for i, c := range convs {
		out[i] = c.ID
	}
	return out
}

// ConvSet is the set of conversations the traffic picks from; it may grow
// while the traffic runs (chaos creates conversations throughout). Safe
// for concurrent use.
type ConvSet struct {
	mu  sync.Mutex
	ids []string
}

// NewConvSet returns a set holding ids.
func NewConvSet(ids ...string) *ConvSet { return &ConvSet{ids: slices.Clone(ids)} }

// Add adds a conversation.
func (s *ConvSet) Add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, id)
}

// All returns a copy of the conversations, in the order added.
func (s *ConvSet) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// Len is the number of conversations.
func (s *ConvSet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

// pick returns a random conversation ("" when empty).
func (s *ConvSet) pick(rng *rand.Rand) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return ""
	}
	return s.ids[rng.IntN(len(s.ids))]
}
