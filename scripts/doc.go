// Package scripts holds no Go code: its tests check the shell scripts
// beside them (make test's installers), with stand-ins for the system
// commands they run.
package scripts
