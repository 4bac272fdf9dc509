package cnats

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI names the files WritePKI wrote.
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// WriteTestPKI is WritePKI valid for a day: a throwaway CA for tests.
func WriteTestPKI(dir string, hosts ...string) (PKI, error) {
	return WritePKI(dir, 24*time.Hour, hosts...)
}

// WritePKI writes a fresh CA and, signed by it, a server/route certificate
// for loopback (127.0.0.1, ::1, localhost) and hosts, and a client
// certificate, into dir (files 0600), all valid for validity from now (an
// hour of clock skew allowed before). The keys are ECDSA P-256. Errors:
// ErrInvalidOptions for a validity that is not positive, the file
// system's.
func WritePKI(dir string, validity time.Duration, hosts ...string) (PKI, error) {
	if validity <= 0 {
		return PKI{}, fmt.Errorf("%w: certificate validity %v", ErrInvalidOptions, validity)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return PKI{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "cutover test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return PKI{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return PKI{}, err
	}
	p := PKI{CA: filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	if err := writePEM(p.CA, "CERTIFICATE", caDER); err != nil {
		return PKI{}, err
	}
	leaf := func(cn string, usage []x509.ExtKeyUsage, certFile, keyFile string, sans bool) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		t := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage}
		if sans {
			t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
			t.DNSNames = []string{"localhost"}
			for _, h := range hosts {
				if ip := net.ParseIP(h); ip != nil {
					t.IPAddresses = append(t.IPAddresses, ip)
				} else {
					t.DNSNames = append(t.DNSNames, h)
				}
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		return errors.Join(writePEM(certFile, "CERTIFICATE", der), writePEM(keyFile, "EC PRIVATE KEY", kb))
	}
	// The server certificate serves both ends of a route, so it is also a
	// client certificate.
	if err := leaf("cutover nats", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, p.ServerCert, p.ServerKey, true); err != nil {
		return PKI{}, err
	}
	if err := leaf("cutover client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, p.ClientCert, p.ClientKey, false); err != nil {
		return PKI{}, err
	}
	return p, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
