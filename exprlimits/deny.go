package exprlimits

import "fmt"

// denied are sprig's functions the controller refuses to run, with what each costs. The controller pays
// for every call, in every pass that evaluates it and once per loop item: an RSA-4096 key took 0.3 to 1
// CPU-second per call, so a loop over sprig.genPrivateKey held a worker for hours in one pass. A call fails
// with an error naming the function; its node or workflow errors as for any expression error.
var denied = map[string]string{
	"genPrivateKey":            "generates a key pair (RSA 4096 or DSA: up to a CPU-second per call)",
	"genCA":                    "generates an RSA key and a certificate (about 50 CPU-ms per call)",
	"genCAWithKey":             "signs a certificate",
	"genSelfSignedCert":        "generates an RSA key and a certificate (about 100 CPU-ms per call)",
	"genSelfSignedCertWithKey": "signs a certificate",
	"genSignedCert":            "generates an RSA key and signs a certificate (about 100 CPU-ms per call)",
	"genSignedCertWithKey":     "signs a certificate",
	"derivePassword":           "derives a password with scrypt (32 MiB and about 100 CPU-ms per call)",
	"bcrypt":                   "hashes with bcrypt (about 60 CPU-ms per call)",
	"htpasswd":                 "hashes with bcrypt (about 60 CPU-ms per call)",
	"getHostByName":            "makes a DNS lookup from the controller",
}

// deny is a function standing for sprig's name that fails whatever its arguments.
func deny(name, why string) func(...any) (any, error) {
	err := fmt.Errorf("sprig.%s is not available in wfguard's expressions: it %s, paid by the controller in every pass that evaluates it; compute such values in a step instead (see %s)",
		name, why, Docs)
	return func(...any) (any, error) { return nil, err }
}
