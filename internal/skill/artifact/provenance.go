package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// The provenance statement's fixed strings.
const (
	statementType  = "https://in-toto.io/Statement/v1"
	predicateType  = "https://slsa.dev/provenance/v1"
	buildType      = "https://execledger.dev/skill-package/v1"
	paramSkillID   = "skill_id"
	paramVersion   = "version"
	paramPublisher = "publisher"
)

// statement is an in-toto Statement v1 with a SLSA provenance v1
// predicate: what was packed (skill.toml, the modules and the assets), by
// what builder, for which skill; no timestamps.
type statement struct {
	Type          string         `json:"_type"`
	Subject       []subject      `json:"subject"`
	PredicateType string         `json:"predicateType"`
	Predicate     slsaProvenance `json:"predicate"`
}

type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

type slsaProvenance struct {
	BuildDefinition struct {
		BuildType          string            `json:"buildType"`
		ExternalParameters map[string]string `json:"externalParameters"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
	} `json:"runDetails"`
}

func provenance(files map[string][]byte, info Info) ([]byte, error) {
	st := statement{Type: statementType, PredicateType: predicateType, Subject: []subject{}}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if p != FileManifest && !isModule(p) && !isAsset(p) {
			continue
		}
		sum := sha256.Sum256(files[p])
		st.Subject = append(st.Subject, subject{Name: p, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}})
	}
	st.Predicate.BuildDefinition.BuildType = buildType
	st.Predicate.BuildDefinition.ExternalParameters = map[string]string{paramSkillID: info.SkillID,
		paramVersion: info.Version, paramPublisher: info.Publisher}
	st.Predicate.RunDetails.Builder.ID = info.Builder
	return json.MarshalIndent(st, "", "  ")
}

// packedInfo reads back the Info an artifact was packed with from its
// provenance, and wants the provenance to be exactly what Pack generates
// for the files and that Info. It is part of the signed payload: what it
// says of the skill is the publisher's word.
func packedInfo(files map[string][]byte) (Info, error) {
	var st statement
	if err := strictJSON(files[FileProvenance], &st); err != nil {
		return Info{}, fmt.Errorf("%w: provenance.json: %v", ErrIntegrity, err)
	}
	params := st.Predicate.BuildDefinition.ExternalParameters
	info := Info{SkillID: params[paramSkillID], Version: params[paramVersion], Publisher: params[paramPublisher],
		Builder: st.Predicate.RunDetails.Builder.ID}
	return info, same(files, FileProvenance, func(files map[string][]byte) ([]byte, error) { return provenance(files, info) })
}
