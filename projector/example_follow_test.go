package projector_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cutover/cutover/nats/natsclient"
	"github.com/cutover/cutover/projector"
)

// ExampleProjector_Follow reads migration changes from the event stream at
// the subscriber's own pace — nothing dropped — from a stream sequence: a
// subscriber that restarts resumes after the last sequence it handled. It
// needs nothing but a NATS connection to the deployment
// (natsclient.Connect; no embedded server). TestFollowResumes runs it
// against a whole deployment.
func ExampleProjector_Follow() {
	ctx := context.Background()
	nc, js, err := natsclient.Connect(ctx, "nats://127.0.0.1:4222")
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	var last uint64 // where the subscriber stopped last time
	err = projector.New(js, nil).Follow(ctx, last+1, func(c projector.Change) error {
		fmt.Println(c.Seq, c.MigrationID, c.Status)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
