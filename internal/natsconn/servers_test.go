package natsconn_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// startServer starts a plain nats-server (no JetStream) on a random
// loopback port with the given options filled in, shut down by the test's
// cleanup.
func startServer(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	opts.Host = "127.0.0.1"
	opts.Port = -1
	opts.NoLog = true
	opts.NoSigs = true
	s, err := server.NewServer(opts)
	require.NoError(tb, err)
	s.Start()
	require.True(tb, s.ReadyForConnections(10*time.Second), "server not ready")
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// tlsFiles are PEM files of a throwaway CA, a server certificate for
// 127.0.0.1 and a client certificate, all signed by the CA.
type tlsFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

func writeTLSFiles(tb testing.TB) tlsFiles {
	tb.Helper()
	dir := tb.TempDir()
	caKey := newKey(tb)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "amends test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(tb, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(tb, err)

	leaf := func(serial int64, usage x509.ExtKeyUsage, name string) (certFile, keyFile string) {
		key := newKey(tb)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(tb, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(tb, err)
		certFile = writePEM(tb, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
		keyFile = writePEM(tb, filepath.Join(dir, name+"-key.pem"), "EC PRIVATE KEY", keyDER)
		return certFile, keyFile
	}
	f := tlsFiles{CA: writePEM(tb, filepath.Join(dir, "ca.pem"), "CERTIFICATE", caDER)}
	f.ServerCert, f.ServerKey = leaf(2, x509.ExtKeyUsageServerAuth, "server")
	f.ClientCert, f.ClientKey = leaf(3, x509.ExtKeyUsageClientAuth, "client")
	return f
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(tb, err)
	return k
}

func writePEM(tb testing.TB, path, typ string, der []byte) string {
	tb.Helper()
	require.NoError(tb, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}

// startTLSServer starts a server that requires TLS and a client
// certificate signed by f.CA.
func startTLSServer(tb testing.TB, f tlsFiles) *server.Server {
	tb.Helper()
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: f.ServerCert, KeyFile: f.ServerKey, CaFile: f.CA, Verify: true})
	require.NoError(tb, err)
	return startServer(tb, &server.Options{TLSConfig: tc, TLSVerify: true, TLSTimeout: 2})
}
