package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cutover/cutover/services/api"
)

func init() {
	register("token", "mint a signed user token for a gateway started with --auth-secret", runToken)
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token", "token --user ID [--secret S] [--ttl D]", stdout)
	user := fs.String("user", "", "user id")
	secret := fs.String("secret", os.Getenv("CUTOVER_AUTH_SECRET"), "the gateway's --auth-secret (env CUTOVER_AUTH_SECRET)")
	ttl := fs.Duration("ttl", 24*time.Hour, "validity")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *user == "" || len(*secret) < 16 || *ttl <= 0 {
		return fmt.Errorf("%w: --user is required, --secret must be at least 16 bytes, --ttl positive", errUsage)
	}
	tok, err := api.SignUserToken([]byte(*secret), *user, *ttl, time.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
