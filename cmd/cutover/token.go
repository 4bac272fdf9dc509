package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/app/api"
)

func init() {
	register("token", "mint a signed user token for a gateway (or projector) started with an auth secret", runToken)
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("token", "token --user ID [--audience api|projector] [--ttl D] [--secret-file FILE]\n\nThe secret is the gateway's (and projector's) token secret, from $"+authSecretEnv+" or --secret-file;\nnever on the command line.", stdout)
	user := fs.String("user", "", "user id")
	secret := addSecret(fs, "secret", authSecretEnv, "the gateway's token secret")
	audience := fs.String("audience", api.AudienceAPI, "who accepts the token: "+api.AudienceAPI+" (the user-facing API) or "+api.AudienceProjector+" (the projector's read models and dashboard)")
	ttl := fs.Duration("ttl", 24*time.Hour, fmt.Sprintf("validity (at most %v)", api.MaxTokenTTL))
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := secret.check(); err != nil {
		return err
	}
	if *user == "" || *ttl <= 0 || *ttl > api.MaxTokenTTL {
		return fmt.Errorf("%w: --user is required and --ttl must be positive and at most %v", errUsage, api.MaxTokenTTL)
	}
	if *audience != api.AudienceAPI && *audience != api.AudienceProjector {
		return fmt.Errorf("%w: --audience %q: want %s or %s", errUsage, *audience, api.AudienceAPI, api.AudienceProjector)
	}
	key, err := secret.value(minSecret)
	if err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("%w: no token secret: set $%s or give --secret-file FILE", errUsage, authSecretEnv)
	}
	tok, err := api.SignUserToken([]byte(key), *user, *audience, *ttl, time.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	fmt.Fprintln(stdout, tok)
	return nil
}
