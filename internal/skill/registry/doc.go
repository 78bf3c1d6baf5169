// Package registry is the Go side of the skills' SQL API
// (migrations/012_skills.sql): installing artifacts, recording audits,
// the lifecycle (approve, enable, disable, rollback, remove), the publisher
// trust store, and reading a skill's state and history.
//
// The lifecycle's rules are the database's: these functions call
// ledger.skill_* as the caller's login role, whose principal
// (ledger.principals) is the actor the two-person rule counts. A request
// the lifecycle refuses on an existing skill is recorded there as
// skill.refused and comes back as a Result with OK false and the reason;
// requests about nothing (no such skill, no privilege) are errors.
package registry
