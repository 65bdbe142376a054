package workload

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatt/gpuwatt/internal/pbwire"
)

// The kubelet's pod-resources API (k8s.io/kubelet/pkg/apis/podresources/v1/api.proto,
// package v1) is gRPC: HTTP/2 without TLS on a unix socket. One unary call is made here
// with net/http's own HTTP/2 (cleartext, Go 1.24+) in place of google.golang.org/grpc
// (~20 s of CPU in a cold compile of the tests, results/dev-vm/2026-11-28-test-timing-2,
// with grpc-gateway and genproto): the request and the answer are each one
// gRPC message (a 5-byte prefix: a compressed flag, then the length, big-endian), the
// outcome is the grpc-status trailer (0: OK) and its grpc-message.
const (
	listPath = "/v1.PodResourcesLister/List"
	// maxMessage bounds the answer, as grpc.MaxCallRecvMsgSize(16 MiB) did.
	maxMessage = 16 << 20
)

// Field numbers of api.proto read here.
const (
	fListPodResources = 1 // ListPodResourcesResponse.pod_resources

	fPodName       = 1 // PodResources.name
	fPodNamespace  = 2 // PodResources.namespace
	fPodContainers = 3 // PodResources.containers

	fContainerName    = 1 // ContainerResources.name
	fContainerDevices = 2 // ContainerResources.devices

	fDevicesResourceName = 1 // ContainerDevices.resource_name
	fDevicesIDs          = 2 // ContainerDevices.device_ids
)

// podResources is what the kubelet's List says of one pod (what Lookup needs of it: its
// containers' CPUs, memory and dynamic resources are not read).
type podResources struct {
	name, namespace string
	containers      []containerResources
}

type containerResources struct {
	name    string
	devices []containerDevices
}

type containerDevices struct {
	resourceName string
	ids          []string
}

// newPodResourcesClient is an HTTP/2 cleartext client whose every connection is to socket.
func newPodResourcesClient(socket string) (*http.Client, *http.Transport) {
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		Protocols:          new(http.Protocols),
		DisableCompression: true,
		MaxIdleConns:       1,
		IdleConnTimeout:    time.Minute,
	}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}, tr
}

// listPodResources makes the List call.
func listPodResources(ctx context.Context, c *http.Client) ([]podResources, error) {
	// An empty ListPodResourcesRequest: the prefix alone.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+listPath, bytes.NewReader(make([]byte, 5)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", "gpuwatt")
	if dl, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10)+"m")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s, not a gRPC answer", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/grpc") {
		return nil, fmt.Errorf("content type %q, not a gRPC answer", ct)
	}
	// A failure may come as headers alone ("trailers-only").
	if err := grpcStatus(resp.Header); err != nil {
		return nil, err
	}
	msg, msgErr := readMessage(resp.Body)
	if msgErr == nil {
		// The trailers come after the body's end, which must follow the one message.
		var extra [1]byte
		if n, err := io.ReadFull(resp.Body, extra[:]); n > 0 {
			msgErr = errors.New("more than one message in a unary answer")
		} else if err != io.EOF {
			msgErr = err
		}
	}
	if err := grpcStatus(resp.Trailer); err != nil {
		return nil, err
	}
	if msgErr != nil {
		return nil, msgErr
	}
	if resp.Trailer.Get("Grpc-Status") == "" {
		return nil, errors.New("no grpc-status in the answer")
	}
	return decodeList(msg)
}

// grpcStatus is the error a grpc-status (with its grpc-message) says; nil for OK or none.
func grpcStatus(h http.Header) error {
	s := h.Get("Grpc-Status")
	if s == "" || s == "0" {
		return nil
	}
	msg, err := url.PathUnescape(h.Get("Grpc-Message"))
	if err != nil {
		msg = h.Get("Grpc-Message")
	}
	return fmt.Errorf("rpc error: code = %s desc = %s", codeName(s), msg)
}

// codeName names a gRPC status code (google.golang.org/grpc/codes).
func codeName(s string) string {
	names := []string{"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
		"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
		"Internal", "Unavailable", "DataLoss", "Unauthenticated"}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n < len(names) {
		return names[n]
	}
	return "Code(" + s + ")"
}

// readMessage reads the one length-prefixed message of a unary answer (at most maxMessage
// bytes, not compressed: no compression was offered).
func readMessage(r io.Reader) ([]byte, error) {
	var prefix [5]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, fmt.Errorf("the answer's message: %w", err)
	}
	if prefix[0] != 0 {
		return nil, fmt.Errorf("a compressed message (flag %d), none was asked for", prefix[0])
	}
	n := binary.BigEndian.Uint32(prefix[1:])
	if n > maxMessage {
		return nil, fmt.Errorf("an answer of %d bytes, more than the %d allowed", n, maxMessage)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, fmt.Errorf("the answer's message (%d bytes): %w", n, err)
	}
	return msg, nil
}

// decodeList decodes a ListPodResourcesResponse.
func decodeList(b []byte) ([]podResources, error) {
	var pods []podResources
	err := pbwire.Each(b, func(f pbwire.Field) error {
		if f.Num != fListPodResources {
			return nil
		}
		msg, err := f.Message()
		if err != nil {
			return err
		}
		p, err := decodePod(msg)
		pods = append(pods, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("not a ListPodResourcesResponse: %w", err)
	}
	return pods, nil
}

func decodePod(b []byte) (podResources, error) {
	var p podResources
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fPodName:
			p.name, err = f.String()
		case fPodNamespace:
			p.namespace, err = f.String()
		case fPodContainers:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				var c containerResources
				c, err = decodeContainer(msg)
				p.containers = append(p.containers, c)
			}
		}
		return err
	})
	return p, err
}

func decodeContainer(b []byte) (containerResources, error) {
	var c containerResources
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fContainerName:
			c.name, err = f.String()
		case fContainerDevices:
			var msg []byte
			if msg, err = f.Message(); err == nil {
				var d containerDevices
				d, err = decodeDevices(msg)
				c.devices = append(c.devices, d)
			}
		}
		return err
	})
	return c, err
}

func decodeDevices(b []byte) (containerDevices, error) {
	var d containerDevices
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case fDevicesResourceName:
			d.resourceName, err = f.String()
		case fDevicesIDs:
			var id string
			id, err = f.String()
			d.ids = append(d.ids, id)
		}
		return err
	})
	return d, err
}
