package jobdecider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// The connection behaviour every job-decider client shares (clients/README.md's
// table): one place, so the table can be checked against these values.
const (
	// ServiceName is the gRPC service the retry policy applies to.
	ServiceName = "jobdecider.v1.JobDecider"
	// LoadBalancingPolicy spreads calls over every address a dns:/// name
	// resolves to (a headless Service), as the shim does.
	LoadBalancingPolicy = "round_robin"
	// DefaultTimeout is the deadline of a call whose context has none: shorter
	// than the server's own 30 s request timeout, so the caller's deadline is
	// what stops the work (it travels as grpc-timeout).
	DefaultTimeout = 10 * time.Second
	// RetryMaxAttempts counts the first attempt: at most 3 retries.
	RetryMaxAttempts = 4
	// RetryInitialBackoff, RetryBackoffMultiplier and RetryMaxBackoff bound
	// the wait before each retry; gRPC waits a random time in [0, backoff].
	RetryInitialBackoff    = 100 * time.Millisecond
	RetryBackoffMultiplier = 2
	RetryMaxBackoff        = 2 * time.Second
	// RetryableCode is the one status retried: OVERLOADED, SHUTTING_DOWN and
	// connection failures; every method of the service is idempotent.
	RetryableCode = "UNAVAILABLE"
	// RetryThrottlingMaxTokens and RetryThrottlingTokenRatio stop retries
	// when most calls fail (gRPC's retry throttling). Opt-in, through
	// WithRetryThrottling: at these values gRPC stops retrying after five
	// failed attempts, so a burst against a server that sheds load with
	// OVERLOADED (and asks to be retried after its pushback) fails calls the
	// retry policy alone would have carried.
	RetryThrottlingMaxTokens  = 10
	RetryThrottlingTokenRatio = 0.1
	// KeepaliveTime and KeepaliveTimeout match the server's pings: a ping
	// after 30 s without traffic, the connection dropped 10 s after an
	// unanswered one, and only while calls are open.
	KeepaliveTime                = 30 * time.Second
	KeepaliveTimeout             = 10 * time.Second
	KeepalivePermitWithoutStream = false
	// MaxReceiveMessageBytes admits the plan of a large Job; sending is
	// unbounded (the server answers RESOURCE_EXHAUSTED past its own limit).
	MaxReceiveMessageBytes = 64 << 20
)

// ServiceConfig is the gRPC service config built from the constants above:
// round_robin and the retry policy for every method of ServiceName. gRPC
// honours the server's grpc-retry-pushback-ms trailer with it.
func ServiceConfig() string { return serviceConfig(false) }

// serviceConfig is ServiceConfig, with retryThrottling when throttled.
func serviceConfig(throttled bool) string {
	type name struct {
		Service string `json:"service"`
	}
	type retryPolicy struct {
		MaxAttempts          int      `json:"maxAttempts"`
		InitialBackoff       string   `json:"initialBackoff"`
		MaxBackoff           string   `json:"maxBackoff"`
		BackoffMultiplier    float64  `json:"backoffMultiplier"`
		RetryableStatusCodes []string `json:"retryableStatusCodes"`
	}
	type methodConfig struct {
		Name        []name      `json:"name"`
		RetryPolicy retryPolicy `json:"retryPolicy"`
	}
	type throttling struct {
		MaxTokens  float64 `json:"maxTokens"`
		TokenRatio float64 `json:"tokenRatio"`
	}
	config := struct {
		LoadBalancingConfig []map[string]struct{} `json:"loadBalancingConfig"`
		MethodConfig        []methodConfig        `json:"methodConfig"`
		RetryThrottling     *throttling           `json:"retryThrottling,omitempty"`
	}{
		LoadBalancingConfig: []map[string]struct{}{{LoadBalancingPolicy: {}}},
		MethodConfig: []methodConfig{{
			Name: []name{{Service: ServiceName}},
			RetryPolicy: retryPolicy{
				MaxAttempts:          RetryMaxAttempts,
				InitialBackoff:       durationJSON(RetryInitialBackoff),
				MaxBackoff:           durationJSON(RetryMaxBackoff),
				BackoffMultiplier:    RetryBackoffMultiplier,
				RetryableStatusCodes: []string{RetryableCode},
			},
		}},
	}
	if throttled {
		config.RetryThrottling = &throttling{MaxTokens: RetryThrottlingMaxTokens, TokenRatio: RetryThrottlingTokenRatio}
	}
	out, err := json.Marshal(config)
	if err != nil { // plain structs of strings and numbers always marshal
		panic(err)
	}
	return string(out)
}

// durationJSON is d as the service config's proto3 JSON Duration ("0.1s").
func durationJSON(d time.Duration) string {
	return fmt.Sprintf("%gs", d.Seconds())
}

// DialOptions is the connection behaviour as gRPC dial options, for callers
// who build their own *grpc.ClientConn: plaintext (a later
// grpc.WithTransportCredentials replaces it), the service config, keepalive,
// the receive limit and the default deadline. Options given after these win.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(ServiceConfig()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                KeepaliveTime,
			Timeout:             KeepaliveTimeout,
			PermitWithoutStream: KeepalivePermitWithoutStream,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxReceiveMessageBytes)),
		// Chained, so that a caller's own interceptors run too rather than replace it.
		grpc.WithChainUnaryInterceptor(DefaultDeadline(DefaultTimeout)),
	}
}

// WithRetryThrottling is the service config with gRPC's retry throttling
// (RetryThrottlingMaxTokens, RetryThrottlingTokenRatio) added: after a run of
// failures the client stops retrying until calls succeed again. Give it to
// NewClient (or after DialOptions) to choose fewer retries under sustained
// overload over riding out bursts.
func WithRetryThrottling() grpc.DialOption {
	return grpc.WithDefaultServiceConfig(serviceConfig(true))
}

// Client is the generated JobDecider client on a connection made with
// DialOptions. Close it when done.
type Client struct {
	pb.JobDeciderClient
	conn *grpc.ClientConn
}

// NewClient connects lazily to target — "host:port", "dns:///host:port",
// "unix:///abs/path.sock" or "unix:relative.sock" — with DialOptions and then
// opts, which win over the defaults (e.g. grpc.WithTransportCredentials with
// TLSFromDir's credentials).
func NewClient(target string, opts ...grpc.DialOption) (*Client, error) {
	conn, err := grpc.NewClient(target, append(DialOptions(), opts...)...)
	if err != nil {
		return nil, err
	}
	return &Client{JobDeciderClient: pb.NewJobDeciderClient(conn), conn: conn}, nil
}

// Conn is the client's connection, e.g. for a health client on the same channel.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection; calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// noDeadlineKey marks a context whose calls go without the default deadline.
type noDeadlineKey struct{}

// WithoutDeadline is ctx with the default deadline switched off: a call on
// it waits as long as ctx does (the server still stops at its own timeout).
func WithoutDeadline(ctx context.Context) context.Context {
	return context.WithValue(ctx, noDeadlineKey{}, true)
}

// DefaultDeadline is a unary interceptor that gives a call whose context has
// no deadline one of d; a context with its own deadline (the per-call
// override) or from WithoutDeadline passes untouched. The deadline covers
// every retry of the call.
func DefaultDeadline(d time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, has := ctx.Deadline(); !has && ctx.Value(noDeadlineKey{}) == nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// The file names of a cert-manager Certificate's Secret, mounted as a directory.
const (
	CAFile   = "ca.crt"
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// TLSConfigFromDir is a TLS configuration from dir laid out as a
// cert-manager Secret: ca.crt is the CA the server's certificate must chain
// to, and tls.crt with tls.key, when present, the client certificate for
// mutual TLS. ServerName is left empty: gRPC then checks the name in the
// target; set it to check another.
func TLSConfigFromDir(dir string) (*tls.Config, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("TLS directory %s: %w", dir, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("TLS directory %s: %s holds no PEM certificate", dir, CAFile)
	}
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	hasCert, err := exists(certPath)
	if err != nil {
		return nil, err
	}
	hasKey, err := exists(keyPath)
	if err != nil {
		return nil, err
	}
	switch {
	case hasCert && hasKey:
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("TLS directory %s: %w", dir, err)
		}
		config.Certificates = []tls.Certificate{pair}
	case hasCert || hasKey:
		return nil, fmt.Errorf("TLS directory %s: %s and %s go together, only one is there", dir, CertFile, KeyFile)
	}
	return config, nil
}

// TLSFromDir is TLSConfigFromDir's configuration as gRPC transport
// credentials: NewClient(target, grpc.WithTransportCredentials(creds)).
func TLSFromDir(dir string) (credentials.TransportCredentials, error) {
	config, err := TLSConfigFromDir(dir)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(config), nil
}

// exists reports whether path is there; an error other than its absence is returned.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
