package otlpexport

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/infile"
)

// Retries as the SDK made them with gpuwatt's settings (otlpmetrichttp.RetryConfig
// {InitialInterval: 500 ms, MaxInterval: 2 s, MaxElapsedTime: the timeout}, with
// cenkalti/backoff's default randomization 0.5 and multiplier 1.5): a 429, 502, 503 or 504
// answer, or a timeout of one attempt, is tried again after the larger of the backoff and
// the answer's Retry-After, while the push's time lasts.
const (
	retryInitial    = 500 * time.Millisecond
	retryMax        = 2 * time.Second
	retryMultiplier = 1.5
	retryJitter     = 0.5
	// maxResponse bounds the read of a collector's answer (the SDK's default).
	maxResponse = 4 << 20
)

// poster posts encoded requests to one endpoint.
type poster struct {
	url       string // the endpoint without its user and password: the SDK never sent them
	client    *http.Client
	transport *http.Transport
	header    http.Header
	gzip      bool
	timeout   time.Duration
}

func newPoster(endpoint string, timeout time.Duration, version string, getenv func(string) string) (poster, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return poster{}, err
	}
	u.User = nil
	tlsCfg, err := envTLS(getenv)
	if err != nil {
		return poster{}, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone() // proxy from the environment, as the SDK
	tr.TLSClientConfig = tlsCfg
	h := http.Header{}
	for k, v := range envHeaders(getenv) {
		h.Set(k, v)
	}
	ua := "gpuwatt"
	if version != "" {
		ua += "/" + version
	}
	h.Set("User-Agent", ua+" (OTLP over HTTP/protobuf metrics)")
	h.Set("Content-Type", "application/x-protobuf")
	gz := envGzip(getenv)
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	return poster{url: u.String(), client: &http.Client{Transport: tr, Timeout: timeout}, transport: tr,
		header: h, gzip: gz, timeout: timeout}, nil
}

func (p poster) close() { p.transport.CloseIdleConnections() }

// send posts body, retrying as the SDK did until ctx ends or the timeout has passed.
func (p poster) send(ctx context.Context, body []byte) error {
	if p.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	start := time.Now()
	backoff := retryInitial
	for {
		err := p.attempt(ctx, body)
		if err == nil {
			return nil
		}
		var re *retryable
		if !errors.As(err, &re) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		elapsed := time.Since(start)
		if elapsed > p.timeout {
			return fmt.Errorf("max retry time elapsed: %w", err)
		}
		if elapsed+re.after > p.timeout {
			return fmt.Errorf("max retry time would elapse: %w", err)
		}
		wait := max(re.after, jittered(backoff))
		backoff = min(time.Duration(float64(backoff)*retryMultiplier), retryMax)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// jittered is d spread uniformly over ±retryJitter of itself.
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 + retryJitter*(2*rand.Float64()-1)))
}

// retryable is a failure worth another attempt, after at least after.
type retryable struct {
	after time.Duration
	err   error
}

func (r *retryable) Error() string { return "retry-able request failure: " + r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// attempt posts once. A 2xx answer is success unless it says the collector rejected points
// (an OTLP partial success, an error as the SDK made it one).
func (p poster) attempt(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = p.header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			return &retryable{err: err}
		}
		return err
	}
	defer resp.Body.Close()
	answer, err := infile.ReadAll(resp.Body, "the collector's answer from "+p.url, maxResponse)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if len(answer) == 0 || resp.Header.Get("Content-Type") != "application/x-protobuf" {
			return nil
		}
		n, msg, err := partialSuccess(answer)
		if err != nil {
			return fmt.Errorf("the collector's answer: %w", err)
		}
		if n != 0 || msg != "" {
			return fmt.Errorf("OTLP partial success: %s (%d metric data points rejected)", msg, n)
		}
		return nil
	}
	text := strings.TrimSpace(string(answer))
	if text == "" {
		text = "(empty)"
	}
	bodyErr := fmt.Errorf("body: %s", text)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &retryable{after: retryAfter(resp.Header.Get("Retry-After")), err: fmt.Errorf("%s: %w", resp.Status, bodyErr)}
	}
	return fmt.Errorf("failed to send metrics to %s: %s (%w)", p.url, resp.Status, bodyErr)
}

// retryAfter is a Retry-After header's wait: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		if s > int64(time.Duration(1<<63-1)/time.Second) {
			return time.Duration(1<<63 - 1)
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
