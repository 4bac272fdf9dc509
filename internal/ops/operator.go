package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cutover/cutover/orchestrator/approval"
)

// Operators' keys and approvals: `cutover operator keygen` makes an
// operator's key pair, `cutover operator register` adds public keys to the
// registry the orchestrators read (operators.json, --operators-file), and
// `cutover approve` signs one approval of a two-person command.

// OperatorKeygenRequest is `cutover operator keygen`.
type OperatorKeygenRequest struct {
	// Name is the operator's name; its canonical form is the one kept
	// (approval.Canonical), which must be a valid name (approval.ValidName).
	Name string
	// Out is the directory the key files go to (created 0700).
	Out string
	// Registry, if set, is a registry file the public key is added to
	// (created if absent).
	Registry string
}

// OperatorKeygen writes a new operator key pair: <name>.key (the private
// key, PEM, 0600; never overwritten) and <name>.pub (the registry entry,
// JSON) into r.Out, adds the entry to r.Registry when given, and prints
// what it wrote. Errors: ErrUsage for a missing directory or an invalid
// name; the files'; approval.ErrRegistry for a name or key the registry
// holds already.
func OperatorKeygen(r OperatorKeygenRequest, stdout io.Writer) error {
	if r.Out == "" {
		return fmt.Errorf("%w: --out is required", ErrUsage)
	}
	k, err := approval.GenerateKey(r.Name)
	if err != nil {
		return fmt.Errorf("%w: --name: %w", ErrUsage, err)
	}
	if err := os.MkdirAll(r.Out, 0o700); err != nil {
		return err
	}
	pem, err := k.MarshalPEM()
	if err != nil {
		return err
	}
	entry, err := json.Marshal(k.Entry())
	if err != nil {
		return err
	}
	keyFile, pubFile := filepath.Join(r.Out, k.Name()+".key"), filepath.Join(r.Out, k.Name()+".pub")
	if err := writeNew(keyFile, pem, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(pubFile, append(entry, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cutover operator keygen: operator %q\n", k.Name())
	fmt.Fprintf(stdout, "  private key  %s (keep it to yourself: it signs your approvals)\n", keyFile)
	fmt.Fprintf(stdout, "  public key   %s: %s\n", pubFile, entry)
	if r.Registry != "" {
		if err := register(r.Registry, k.Entry()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  registered   in %s\n", r.Registry)
	}
	return nil
}

// OperatorRegisterRequest is `cutover operator register`.
type OperatorRegisterRequest struct {
	// Registry is the registry file (created if absent).
	Registry string
	// Entries are files holding one registry entry each (<name>.pub).
	Entries []string
}

// OperatorRegister adds r.Entries to r.Registry, all or none. Errors:
// ErrUsage for a missing registry or entry; the files'; approval.ErrRegistry
// for an invalid entry, or a name or key registered already.
func OperatorRegister(r OperatorRegisterRequest, stdout io.Writer) error {
	if r.Registry == "" || len(r.Entries) == 0 {
		return fmt.Errorf("%w: --registry and at least one ENTRY file are required", ErrUsage)
	}
	var es []approval.Entry
	for _, f := range r.Entries {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var e approval.Entry
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("%s: %w: %v", f, approval.ErrRegistry, err)
		}
		es = append(es, e)
	}
	if err := register(r.Registry, es...); err != nil {
		return err
	}
	for _, e := range es {
		fmt.Fprintf(stdout, "registered operator %q in %s\n", e.Name, r.Registry)
	}
	return nil
}

// register adds es to the registry file at path (created if absent),
// replacing it at once (a temporary file renamed over it, 0644).
func register(path string, es ...approval.Entry) error {
	reg, err := approval.LoadRegistry(path)
	if errors.Is(err, fs.ErrNotExist) {
		reg, err = approval.NewRegistry()
	}
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := reg.Add(e); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".operators-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ApproveRequest is `cutover approve`: one operator's signed approval of a
// two-person command.
type ApproveRequest struct {
	// Key is the operator's key file.
	Key string
	// Operation is approval.OpForceRelease or approval.OpFenceClear.
	Operation string
	// Resource ("kind/id"), Region (fence clear only) and Reason are what
	// is approved: the command must say the same.
	Resource, Region, Reason string
	// Valid is how long the approval stays valid (0: DefaultApprovalValidity;
	// at most approval.MaxValidity).
	Valid time.Duration
	// Out, if set, is a file the approval is written to (0600; never
	// overwritten); otherwise it is printed.
	Out string
}

// Approve signs r's approval and prints its token on stdout (or writes it
// to r.Out), and on stderr what it approves and until when. Errors:
// ErrUsage for a malformed request or key; the files'.
func Approve(r ApproveRequest, stdout, stderr io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	if r.Region != "" {
		if err := CheckRegion("region", r.Region); err != nil {
			return err
		}
	}
	if r.Key == "" {
		return fmt.Errorf("%w: --key is required", ErrUsage)
	}
	q := approval.Request{Operation: r.Operation, Resource: res.String(), Region: r.Region, Reason: r.Reason}
	if err := q.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	valid := r.Valid
	if valid == 0 {
		valid = DefaultApprovalValidity
	}
	k, err := readKey(r.Key)
	if err != nil {
		return err
	}
	now := time.Now()
	tok, err := k.Approve(q, now, valid)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	fmt.Fprintf(stderr, "cutover approve: %s approves %s until %s\n", k.Name(), q, rfc(now.Add(valid).Truncate(time.Second)))
	if r.Out != "" {
		return writeNew(r.Out, []byte(tok+"\n"), 0o600)
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}
