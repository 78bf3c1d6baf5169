// Package witness owns the witness protocol: a party other than the log's
// operator reads the log's newest checkpoint, checks that the tree it
// commits to extends the one the witness accepted before (its state file),
// and only then cosigns it (C2SP tlog-cosignature) and moves its state. A
// log that lost, rewrote or forked what the witness saw gets no
// cosignature, and serve, which publishes a checkpoint only once its
// witnesses have cosigned it, publishes nothing new.
//
// Witness runs one pass; Runner runs passes in a loop, retrying while the
// database is away. Printing the passes and choosing exit codes is the
// command's (cmd/execledger witness).
package witness
