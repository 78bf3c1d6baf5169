package sandboxexec

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// systemRead are the operating system directories every sandbox may read.
// Each is on the sealed, read-only system volume or installed by Apple,
// and holds no user data. Go 1.26 needs macOS 12 or later, so the dyld
// shared cache locations of older releases (/private/var/db/dyld) are left
// out.
var systemRead = []string{
	"/bin",                                 // sh, ls and the other base tools
	"/sbin",                                // system tools that PATH includes
	"/usr/bin",                             // the rest of the base tools and the developer-tool shims
	"/usr/sbin",                            // system tools that PATH includes
	"/usr/lib",                             // dyld, libSystem and the other system libraries
	"/usr/share",                           // locale data, terminfo, ICU data and the zoneinfo link
	"/System/Library",                      // frameworks, the dyld shared cache before macOS 13, SystemVersion.plist
	"/System/Volumes/Preboot/Cryptexes/OS", // the dyld shared cache and system libraries from macOS 13
	"/Library/Apple",                       // Apple components outside the sealed volume, Rosetta 2 among them
	"/private/var/db/timezone",             // time zone data behind /etc/localtime and /usr/share/zoneinfo
}

// systemReadFiles are single files every sandbox may read: the host's time
// zone, a link into /private/var/db/timezone. No other file of
// /private/etc is readable (accounts come from the directory service
// below, and name resolution is not needed behind the proxy).
var systemReadFiles = []string{"/private/etc/localtime"}

// networkRead are read only when Network is set: the CA bundle and
// OpenSSL configuration that LibreSSL clients (curl) use to verify TLS
// through the proxy.
var networkRead = []string{"/private/etc/ssl"}

// systemCode are the directories whose files dyld may map as executable
// code: the system libraries and frameworks. The workspace and the
// temporary directory are never among them.
var systemCode = []string{
	"/usr/lib",
	"/System/Library/Frameworks",
	"/System/Library/PrivateFrameworks",
	"/System/Volumes/Preboot/Cryptexes/OS",
	"/Library/Apple",
}

// rootLinks are the symbolic links at the root that paths go through
// (/etc/localtime, /tmp/...): their metadata is readable so that the
// links resolve. /System/Cryptexes/OS leads to the cryptex from macOS 13.
var rootLinks = []string{"/etc", "/tmp", "/var", "/System/Cryptexes/OS"}

// devices are the character devices any program may read. Only /dev/null
// is writable. /dev/dtracehelper, which dyld opens to register DTrace
// probes, is left out: dyld goes on without it.
var devices = []string{"/dev/null", "/dev/random", "/dev/urandom", "/dev/zero"}

// sysctls are the read-only kernel variables programs commonly query,
// by exact name. Writing any sysctl stays denied.
var sysctls = []string{
	// Processor and memory sizes, for thread pools and heaps; the Go
	// runtime reads hw.ncpu and hw.pagesize.
	"hw.activecpu", "hw.logicalcpu", "hw.logicalcpu_max", "hw.ncpu",
	"hw.physicalcpu", "hw.physicalcpu_max",
	"hw.pagesize", "hw.pagesize_compat", "hw.memsize",
	// Processor type, for code path selection in libSystem and runtimes.
	"hw.byteorder", "hw.cachelinesize", "hw.cpufamily", "hw.cpusubtype", "hw.cputype",
	"machdep.cpu.brand_string",
	// uname(3) reads these five and fails if any is denied, so the host
	// name is visible.
	"hw.machine", "kern.ostype", "kern.osrelease", "kern.version", "kern.hostname",
	// The macOS version, which runtimes and build tools query, and the
	// variant that libSystem's os_variant checks read.
	"kern.osproductversion", "kern.osversion", "kern.osvariant_status",
	// ARG_MAX, for xargs, find and shells.
	"kern.argmax",
	// The Go runtime reads it to raise its open-file limit.
	"kern.maxfilesperproc",
	// The process's CPU type, and whether Rosetta 2 translates it.
	"sysctl.proc_cputype", "sysctl.proc_translated",
}

// sysctlPrefixes are read-only kernel variables allowed by name prefix:
// the CPU feature flags (the Go runtime reads hw.optional.arm.FEAT_* and
// hw.optional.armv8_*) and the performance and efficiency core counts.
var sysctlPrefixes = []string{"hw.optional.", "hw.perflevel"}

// machServices are the only Mach services the process may look up. Every
// other one stays denied, among them logd and notify(3)'s
// notification_center (logging and notifications fail quietly), cfprefsd
// (preferences), mDNSResponder (name resolution), launchservicesd,
// pasteboard and window server services.
var machServices = []string{
	// getpwuid(3) and getgrgid(3), through which most tools learn their
	// user's name and home; Chromium grants it for the same reason
	// (crbug.com/792228). Host accounts are readable through it.
	"com.apple.system.opendirectoryd.libinfo",
}

// networkMachServices are added with Network: Security.framework, which
// verifies TLS certificates for Go programs and Apple's own clients, asks
// trustd over this service.
var networkMachServices = []string{"com.apple.trustd.agent"}

// Profile renders the plan's Seatbelt profile. It is a pure function of
// the plan: the same plan gives the same bytes on every platform. Paths
// appear only in literal and subpath filters, never in regular
// expressions, escaped as SBPL string literals.
func (p Plan) Profile() (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("(version 1)\n\n; Everything not allowed below is denied.\n(deny default)\n")
	p.processRules(&b)
	p.fileRules(&b)
	rule(&b, "Read-only kernel variables.", "sysctl-read", sysctlFilters())
	rule(&b, "Mach services: a minimal list.", "mach-lookup", filters("global-name", p.machServices()))
	if p.Network {
		rule(&b, "Network: outbound TCP to the egress proxy on loopback only.", "network-outbound",
			[]string{fmt.Sprintf("(remote tcp %s)", quote("localhost:"+strconv.Itoa(p.ProxyPort)))})
	} else {
		b.WriteString("\n; Network: none. No network rule, so (deny default) denies network*.\n")
	}
	return b.String(), nil
}

// processRules allows executing the program and Exec, forking when Fork
// is set, and signals and process information within the sandbox only.
func (p Plan) processRules(b *strings.Builder) {
	rule(b, "Processes: sandbox-exec applies this profile and then executes the program,\n; so the program must be allowed; nothing else runs unless listed.",
		"process-exec", filters("literal", p.executables()))
	if p.Fork {
		b.WriteString("\n; Fork: children inherit this profile.\n(allow process-fork)\n")
	}
	rule(b, "Signals and process information only within this sandbox.", "signal", []string{"(target same-sandbox)"})
	rule(b, "", "process-info*", []string{"(target same-sandbox)"})
}

// fileRules allows the system and plan reads, code mapping, the
// ancestors' metadata, the devices, and the read-write directories.
func (p Plan) fileRules(b *strings.Builder) {
	rule(b, "Operating system files, read-only.", "file-read*", filters("subpath", p.systemRead()))
	if extra := p.readOnly(); len(extra) > 0 {
		rule(b, "The plan's read-only paths.", "file-read*", filters("subpath", extra))
	}
	rule(b, "Single files, read-only: the time zone, the program and the other executables.",
		"file-read*", filters("literal", sortedSet(append(slices.Clone(systemReadFiles), p.executables()...))))
	code := append(filters("subpath", append(slices.Clone(systemCode), p.readOnly()...)), filters("literal", p.executables())...)
	rule(b, "Files dyld may map as code.", "file-map-executable", code)
	rule(b, "Metadata of the directories above the paths, so that they resolve.", "file-read-metadata", filters("literal", p.ancestors()))
	rule(b, "Devices.", "file-read*", filters("literal", devices))
	rule(b, "", "file-write-data", filters("literal", []string{"/dev/null"}))
	rw := []string{p.Workspace}
	if p.TempDir != "" && p.TempDir != p.Workspace {
		rw = append(rw, p.TempDir)
	}
	rule(b, "The workspace and the temporary directory, read-write.", "file-read* file-write*", filters("subpath", rw))
}

// systemRead returns systemRead, with networkRead under Network.
func (p Plan) systemRead() []string {
	if p.Network {
		return append(slices.Clone(systemRead), networkRead...)
	}
	return systemRead
}

// machServices returns machServices, with networkMachServices under Network.
func (p Plan) machServices() []string {
	if p.Network {
		return append(slices.Clone(machServices), networkMachServices...)
	}
	return machServices
}

// executables returns Program and Exec, sorted, without duplicates.
func (p Plan) executables() []string {
	return sortedSet(append([]string{p.Program}, p.Exec...))
}

// readOnly returns ReadOnly, sorted, without duplicates.
func (p Plan) readOnly() []string {
	return sortedSet(p.ReadOnly)
}

// ancestors returns the proper ancestors of every path the profile
// names, and the root links, sorted: their metadata (stat, readlink) is
// readable, their contents are not.
func (p Plan) ancestors() []string {
	var paths []string
	paths = append(paths, p.systemRead()...)
	paths = append(paths, systemReadFiles...)
	paths = append(paths, rootLinks...)
	paths = append(paths, systemCode...)
	paths = append(paths, devices...)
	paths = append(paths, p.readOnly()...)
	paths = append(paths, p.executables()...)
	paths = append(paths, p.Workspace, p.dir())
	if p.TempDir != "" {
		paths = append(paths, p.TempDir)
	}
	out := slices.Clone(rootLinks)
	for _, path := range paths {
		for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
			out = append(out, dir)
			if dir == "/" {
				break
			}
		}
	}
	return sortedSet(out)
}

// sysctlFilters returns the sysctl-read filters.
func sysctlFilters() []string {
	return append(filters("sysctl-name", sysctls), filters("sysctl-name-prefix", sysctlPrefixes)...)
}

// filters returns (kind "value") for each value.
func filters(kind string, values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = "(" + kind + " " + quote(v) + ")"
	}
	return out
}

// rule writes an allow rule, one filter per line, after an optional
// comment. A rule without filters is left out: written as is, it would
// allow the operation outright.
func rule(b *strings.Builder, comment, operations string, filters []string) {
	if len(filters) == 0 {
		return
	}
	if comment != "" {
		b.WriteString("\n; " + comment + "\n")
	}
	b.WriteString("(allow " + operations)
	for _, f := range filters {
		b.WriteString("\n  " + f)
	}
	b.WriteString(")\n")
}

// quote returns s as an SBPL (Scheme) string literal: in double quotes,
// with backslash and double quote escaped by a backslash. Every other
// character stands for itself, UTF-8 included; the plan's checks have
// refused control characters, which would need other escapes.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// sortedSet returns a sorted copy of s without duplicates.
func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
