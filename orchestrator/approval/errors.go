package approval

import "errors"

// Every refusal of Verify wraps one of these, and ErrRefused.
var (
	// ErrRefused is wrapped by every error of Verify: the approvals do not
	// authorise the request.
	ErrRefused = errors.New("approval: refused")
	// ErrMalformed is returned for a token, key or statement that does not
	// parse, or is not in its canonical form.
	ErrMalformed = errors.New("approval: malformed")
	// ErrUnknownOperator is returned for an approval whose operator is not
	// in the registry.
	ErrUnknownOperator = errors.New("approval: unknown operator")
	// ErrSignature is returned for an approval whose signature is not its
	// operator's.
	ErrSignature = errors.New("approval: bad signature")
	// ErrExpired is returned for an approval that has expired, is issued
	// in the future, or is valid for longer than MaxValidity.
	ErrExpired = errors.New("approval: not valid now")
	// ErrMismatch is returned for an approval of another operation,
	// resource, region or reason than the request's.
	ErrMismatch = errors.New("approval: approves something else")
	// ErrSameOperator is returned when one operator (one canonical name,
	// or one key) approves twice.
	ErrSameOperator = errors.New("approval: the same operator twice")
	// ErrTooFew is returned with fewer than MinApprovers approvals.
	ErrTooFew = errors.New("approval: too few approvals")
	// ErrApprovers is returned when the approvers a command names are not
	// exactly the operators who signed its approvals.
	ErrApprovers = errors.New("approval: approvers and approvals differ")
	// ErrName is returned for a name that cannot be an operator's
	// (ValidName).
	ErrName = errors.New("approval: invalid operator name")
	// ErrRegistry is returned for a registry that does not parse, holds a
	// name or a key twice, or is writable by others than its owner.
	ErrRegistry = errors.New("approval: invalid registry")
)

// refused wraps a reason in ErrRefused.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

func (r refusal) Unwrap() []error { return []error{r.err, ErrRefused} }
