package cnats

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The users file of `cutover nats --users` (written by `cutover certs`): a
// JSON list of {"name", "password" (a bcrypt hash), "identity", "regions"}.

// usersFileEntry is one user of a users file.
type usersFileEntry struct {
	Name     string   `json:"name"`
	Password string   `json:"password"`
	Identity string   `json:"identity"`
	Regions  []string `json:"regions,omitempty"`
}

// ParseUsersFile reads a users file; unknown fields are refused. The users
// are not validated here (SecureOptions.Validate does).
func ParseUsersFile(b []byte) ([]User, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var us []usersFileEntry
	if err := dec.Decode(&us); err != nil {
		return nil, fmt.Errorf("cnats: users file: %w", err)
	}
	out := make([]User, 0, len(us))
	for _, u := range us {
		out = append(out, User{Name: u.Name, Password: u.Password, Identity: Identity(u.Identity), Regions: u.Regions})
	}
	return out, nil
}

// MarshalUsersFile writes us as a users file (indented, with a final line
// break).
func MarshalUsersFile(us []User) ([]byte, error) {
	es := make([]usersFileEntry, 0, len(us))
	for _, u := range us {
		es = append(es, usersFileEntry{Name: u.Name, Password: u.Password, Identity: string(u.Identity), Regions: u.Regions})
	}
	b, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
