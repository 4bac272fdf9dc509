package contractnats

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/cutover/cutover/services/contract"
)

// Signed replies (docs/participant.md "Signed replies"). The NATS
// permissions let only a region's service identities receive its contract
// requests, and a reply can only answer a request received; on top of
// that, the orchestrator accepts a reply only when it is signed with the
// key of the region it asked, so that a reply forged by anyone else — a
// misconfigured permission, a service of another region, a reader — is
// refused, and a cutover can never be pushed through on forged import
// results or digests.
//
// Each region has its own key, derived from the deployment's contract
// secret (RegionKey): the orchestrator holds the secret, a region's
// services hold only their region's key, so a service of one region
// cannot sign for another. A request carries a random nonce
// (HeaderNonce); the reply's signature (HeaderSignature) is
//
//	hex(HMAC-SHA256(key, "cutover-reply/1\n" + subject + "\n" + nonce + "\n" + code + "\n" + body))
//
// where subject is the request's subject, code the reply's
// Nats-Service-Error-Code ("" for a success) and body the reply's bytes: a
// signature answers one request, and an old reply replayed to another
// request does not verify. A page published to PagesStream carries
// HeaderSignature over ("cutover-page/1", its subject, its Nats-Msg-Id, "",
// its bytes), so that an exporter that finds its page already stored (a
// deduplicated publish) accepts the stored page only if its own region
// signed it: nobody can plant a page under a predictable Msg-Id ahead of
// the export.

// Headers of signed requests and replies.
const (
	// HeaderNonce is the request's random nonce (32 hex digits).
	HeaderNonce = "Cutover-Nonce"
	// HeaderSignature is a reply's or a page's signature.
	HeaderSignature = "Cutover-Signature"
)

// MinSecretLen is the shortest contract secret RegionKey accepts callers to
// use (the roles refuse shorter ones).
const MinSecretLen = 32

// RegionKey derives region's contract key from the deployment's contract
// secret: HMAC-SHA256(secret, "cutover-contract-region/1\n" + region).
func RegionKey(secret []byte, region string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("cutover-contract-region/1\n" + region))
	return m.Sum(nil)
}

// Keys returns the contract key of a region, or false when it has none: the
// verifying side's keyring. A nil Keys verifies nothing (development).
type Keys func(region string) ([]byte, bool)

// SecretKeys is the keyring of the holder of the contract secret (the
// orchestrator): every region's key, derived.
func SecretKeys(secret []byte) Keys {
	s := append([]byte(nil), secret...)
	return func(region string) ([]byte, bool) { return RegionKey(s, region), true }
}

// signature is the hex HMAC of one signed message.
func signature(key []byte, kind, subject, nonce, code string, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%s\n%s\n%s\n", kind, subject, nonce, code)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// verifySignature reports whether sig is signature(key, ...) (in constant
// time).
func verifySignature(key []byte, sig, kind, subject, nonce, code string, body []byte) bool {
	want := signature(key, kind, subject, nonce, code, body)
	return hmac.Equal([]byte(sig), []byte(want))
}

const (
	replyKind = "cutover-reply/1"
	pageKind  = "cutover-page/1"
)

// newNonce returns 16 random bytes in hex.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// signReply sets the signature of a reply to the request (subject, nonce)
// with key; a nil key signs nothing.
func signReply(key []byte, subject, nonce string, hdr nats.Header, body []byte) nats.Header {
	if key == nil {
		return hdr
	}
	if hdr == nil {
		hdr = nats.Header{}
	}
	hdr.Set(HeaderSignature, signature(key, replyKind, subject, nonce, hdr.Get(micro.ErrorCodeHeader), body))
	return hdr
}

// checkReply verifies reply to the request (subject, nonce) against
// region's key in keys; nil keys accept anything. A reply that is not
// signed by the region's key is refused with CodeInternal: it did not come
// from a server of that region, and acting on it could push a cutover
// through on forged results.
func checkReply(keys Keys, region, subject, nonce string, reply *nats.Msg) error {
	if keys == nil {
		return nil
	}
	key, ok := keys(region)
	if !ok {
		return contract.Errorf(contract.CodeInternal, "contract reply on %s: no key for region %q", subject, region)
	}
	sig := reply.Header.Get(HeaderSignature)
	if sig == "" || !verifySignature(key, sig, replyKind, subject, nonce, reply.Header.Get(micro.ErrorCodeHeader), reply.Data) {
		return contract.Errorf(contract.CodeInternal,
			"contract reply on %s is not signed by region %s's key: refused (a forged reply, or a server without the region's contract key)", subject, region)
	}
	return nil
}
