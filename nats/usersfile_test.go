package cnats

import (
	"reflect"
	"strings"
	"testing"
)

func TestUsersFileRoundTrip(t *testing.T) {
	us := []User{
		{Name: "svc-us", Password: "$2a$10$hash", Identity: IdentityService, Regions: []string{"us-east"}},
		{Name: "reader", Password: "$2a$10$other", Identity: IdentityReader},
	}
	b, err := MarshalUsersFile(us)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseUsersFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, us) {
		t.Fatalf("round trip: got %+v, want %+v", got, us)
	}
}

func TestUsersFileRefusesUnknownFieldsAndBadJSON(t *testing.T) {
	for _, in := range []string{
		`[{"name":"a","password":"p","identity":"reader","admin":true}]`,
		`{"name":"a"}`,
		`[`,
	} {
		if _, err := ParseUsersFile([]byte(in)); err == nil || !strings.Contains(err.Error(), "users file") {
			t.Errorf("ParseUsersFile(%s) = %v, want a users file error", in, err)
		}
	}
}
