package system

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contractnats"
)

// DefaultQueueWrites is how long the API parks a write behind a write lock
// or fence before its 423 (Config.QueueWrites; README "Production").
const DefaultQueueWrites = 2 * time.Second

// ErrConfig marks a configuration the caller got wrong (a command maps it
// to a usage error, exit code 2).
var ErrConfig = errors.New("system: invalid configuration")

// Config describes one process's share of a deployment. `cutover dev`,
// demo, chaos and the bench suites fill every part; the roles fill some.
// Zero values mean the dev defaults of paper 001 Table 5 (EnsureDefaults).
type Config struct {
	// DataDir holds the NATS store and the regions' Pebble stores; "" keeps
	// everything in memory (Pebble) or in a temporary store (NATS).
	DataDir string
	// NATSURL connects to an existing deployment; "" starts an embedded
	// server (or cluster, see Cluster).
	NATSURL  string
	NATSPort int
	// Cluster is the number of JetStream nodes: 1, or 3 for R3 streams.
	// With Supercluster it is the number of nodes per region.
	Cluster int
	// Supercluster starts one embedded cluster per region (Cluster nodes
	// each) joined by gateways instead of one cluster for every region
	// (DESIGN.md "Regions for real"): ROUTING and the migration streams in
	// the first region, a ROUTING mirror in each other region, PAGES in the
	// second region (the importing region of a migration away from the
	// first; one PAGES stream serves both directions), and each region's
	// services connected to their own cluster.
	Supercluster bool
	// WAN shapes every gateway link of the supercluster (delay and
	// bandwidth; cnats.ParseWAN reads the --wan flag).
	WAN cnats.WAN
	// RegionURLs, with NATSURL and Supercluster, are the client URLs of
	// each region's own cluster in a supercluster started elsewhere (`cutover
	// chaos --supercluster` owns the nodes it breaks): each region's
	// services connect there, and NATSURL is the first region's.
	RegionURLs map[string]string
	// Home and PagesRegion place ROUTING (with each region's mirror in its
	// own cluster) and PAGES in a supercluster whose roles run as separate
	// processes (the roles' --placement). Empty with Supercluster: the
	// first and the second region.
	Home, PagesRegion string
	// NATSSyncLazy runs an embedded single node with JetStream's default
	// background fsync instead of sync always (bench.LazyJetStream).
	NATSSyncLazy bool
	// Regions served; the first is the write region of the routing bucket
	// and where new conversations are created.
	Regions []string
	// HTTPAddr is the user-facing API's listen address ("" = any free
	// loopback port).
	HTTPAddr string
	// DashboardAddr, if set, serves the projector's read models and the
	// operator dashboard there ("127.0.0.1:0" = any free port).
	DashboardAddr string
	// Timings (paper 001 Table 5, dev values).
	Tiers            []time.Duration
	ReplicationBound time.Duration
	ClockSkew        time.Duration
	Locks            kvrouting.LockConfig
	// RoutingHistory is the ROUTING bucket's history (0 = the bucket's
	// default); chaos keeps the KV maximum for its observer.
	RoutingHistory uint8
	// ServiceSecret authenticates the validator's service identity at the
	// API (/metrics, /v1/internal) and is what the orchestrator's validator
	// sends. Empty: no service identity is accepted (Start, one process
	// for both ends, draws a random one).
	ServiceSecret string
	// QueueWrites is how long the API parks a write refused by a write lock
	// or fence before answering 423 (api.Config.QueueWrites): 0 = the
	// default, 2 s; negative = no queueing. QueueMax bounds the writes
	// parked at once (0 = httproute.DefaultQueueMax).
	QueueWrites time.Duration
	QueueMax    int
	// ContractSecret is the deployment's contract secret
	// (contractnats.RegionKey): the orchestrator's directory accepts only
	// contract replies signed with the key of the region it asked, and this
	// process's contract servers sign with their region's key derived from
	// it. ContractKey, for a role serving one region without the secret
	// (`cutover service`), is that region's key instead. Neither: nothing
	// is signed or verified (development; Start, one process for both
	// ends, draws a random secret).
	ContractSecret string
	ContractKey    []byte
	// AuthSecret, when set, makes the API accept only signed user tokens
	// (api.SignedAuth, audience api.AudienceAPI) and the projector's HTTP
	// only tokens for api.AudienceProjector (or a service identity).
	AuthSecret string
	// InsecureDevAuth, with no AuthSecret, runs development identities: the
	// API accepts "Bearer user:<id>" with no secret (api.DevAuth) and the
	// projector's HTTP needs no authentication; with no operator registry
	// (Orchestrator.Operators) the orchestrator takes two-person commands
	// approved by unsigned names. The roles refuse to start with neither
	// (Start, the in-process development deployment, implies it).
	InsecureDevAuth bool
	// Provisioned says the deployment's buckets and streams were created
	// by the admin identity (`cutover provision`): this process creates
	// none (its NATS identity may not) and Join only checks they exist.
	Provisioned bool
	// HTTP hardens the HTTP listeners (zero values: the defaults of
	// HTTPLimits).
	HTTP HTTPLimits
	// Orchestrator settings (dev values when zero: see EnsureDefaults).
	Orchestrator orchestrator.Config
	// Workers is the number of orchestrator workers Start runs (0 = 2; -1
	// = none, for callers that start their own, like chaos).
	Workers int
	// NoProjector leaves the projector out of Start; NoEventMetrics leaves
	// the metrics' migration events feed out (the bench suites measure
	// without it).
	NoProjector    bool
	NoEventMetrics bool
	InMemory       bool
	Logger         *slog.Logger
	// WorkerOptions are given to every worker (bench baselines only:
	// bench.FencePolicy, orchestrator.WithoutHolderCache).
	WorkerOptions []orchestrator.WorkerOption
	// Postgres, when set, is a PostgreSQL URL: every region's messages
	// service keeps its records there through the participant kit
	// (services/pgstore; rows keyed "messages@<region>") while the other
	// services stay on Pebble, so one conversation spans both kinds of
	// store.
	Postgres string
	// StoreFS, if set, wraps the filesystem of every service store (chaos:
	// a filesystem whose fsyncs are sometimes slow).
	StoreFS func(vfs.FS) vfs.FS
}

// contractKey is the key region's contract servers sign with (nil: none).
func (c *Config) contractKey(region string) []byte {
	switch {
	case c.ContractKey != nil:
		return c.ContractKey
	case c.ContractSecret != "":
		return contractnats.RegionKey([]byte(c.ContractSecret), region)
	}
	return nil
}

// contractKeys is the keyring the directory verifies replies with (nil:
// none).
func (c *Config) contractKeys() contractnats.Keys {
	if c.ContractSecret == "" {
		return nil
	}
	return contractnats.SecretKeys([]byte(c.ContractSecret))
}

// EnsureDefaults fills zero fields with the dev defaults and checks the
// regions. Errors: ErrConfig.
func (c *Config) EnsureDefaults() error {
	if len(c.Regions) == 0 {
		c.Regions = slices.Clone(cnats.DefaultRegions) // us-east, eu-west
	}
	for _, r := range c.Regions {
		if err := cnats.ValidateRegion(r); err != nil || strings.ToLower(r) != r {
			return fmt.Errorf("%w: region %q", ErrConfig, r)
		}
	}
	if len(c.Tiers) == 0 {
		c.Tiers = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}
	}
	if c.ReplicationBound == 0 {
		c.ReplicationBound = 500 * time.Millisecond
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = 100 * time.Millisecond
	}
	if c.Cluster == 0 {
		c.Cluster = 1
	}
	if c.Supercluster && len(c.Regions) < 2 {
		return fmt.Errorf("%w: a supercluster needs >= 2 regions", ErrConfig)
	}
	if len(c.RegionURLs) > 0 && (c.NATSURL == "" || !c.Supercluster) {
		return fmt.Errorf("%w: region URLs name an external supercluster: they need a NATS URL and Supercluster", ErrConfig)
	}
	for _, r := range c.Regions {
		if len(c.RegionURLs) > 0 && c.RegionURLs[r] == "" {
			return fmt.Errorf("%w: no URL for region %s of the external supercluster", ErrConfig, r)
		}
	}
	if c.WAN != (cnats.WAN{}) && !c.Supercluster {
		return fmt.Errorf("%w: --wan shapes supercluster gateways: it needs --supercluster", ErrConfig)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Workers == 0 {
		c.Workers = 2
	}
	if c.QueueWrites == 0 {
		c.QueueWrites = DefaultQueueWrites
	}
	if c.QueueMax < 0 {
		return fmt.Errorf("%w: negative queue max %d", ErrConfig, c.QueueMax)
	}
	if err := c.HTTP.ensureDefaults(); err != nil {
		return err
	}
	o := &c.Orchestrator
	if o.Convergence == "" {
		o.Convergence = orchestrator.ConvergenceFence
	}
	if o.ConvergenceBuffer == 0 {
		o.ConvergenceBuffer = 100 * time.Millisecond
	}
	if o.ReplicationBound == 0 {
		o.ReplicationBound = c.ReplicationBound
	}
	if o.CleanupWindow == 0 {
		o.CleanupWindow = time.Minute
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = 200 * time.Millisecond
	}
	if o.RescheduleBackoff == 0 {
		o.RescheduleBackoff = time.Second
	}
	if o.AckWait == 0 {
		o.AckWait = 5 * time.Second
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = min(o.AckWait, orchestrator.DefaultStepTimeout) // Validate: ack wait ≥ step timeout
	}
	if o.TenantPoll == 0 {
		o.TenantPoll = 100 * time.Millisecond
	}
	if o.Parallel == 0 {
		o.Parallel = 64
	}
	if c.Locks.PreLockLease == 0 {
		c.Locks = kvrouting.LockConfig{PreLockLease: 2 * time.Minute, HardDeleteLease: 30 * time.Second,
			WriteLease: 10 * time.Second, MaxLease: 30 * time.Minute, SecondaryLease: time.Hour}
	}
	return nil
}

// placement is where the ROUTING bucket and PAGES go ("" each outside a
// supercluster: the connected cluster).
func (c *Config) placement() (home, pages string) {
	switch {
	case c.Home != "":
		return c.Home, cmp.Or(c.PagesRegion, c.Home)
	case !c.Supercluster:
		return "", ""
	}
	return c.Regions[0], c.Regions[1]
}

// replicas is the replica count of the streams this deployment creates.
func (c *Config) replicas() int { return cnats.DefaultReplicas(c.Cluster) }
