package artifact

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
)

// CycloneDX 1.5, the parts an artifact's SBOM uses, in a fixed key order.
type cdxBOM struct {
	BOMFormat   string         `json:"bomFormat"`
	SpecVersion string         `json:"specVersion"`
	Version     int            `json:"version"`
	Metadata    cdxMetadata    `json:"metadata"`
	Components  []cdxComponent `json:"components"`
}

type cdxMetadata struct {
	Component cdxComponent `json:"component"`
}

type cdxComponent struct {
	Type      string    `json:"type"`
	Name      string    `json:"name"`
	Version   string    `json:"version,omitempty"`
	Publisher string    `json:"publisher,omitempty"`
	Hashes    []cdxHash `json:"hashes,omitempty"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

// sbom lists the skill's modules and assets with their SHA-256 digests,
// with no timestamp and no random serial number, so that packing is
// deterministic.
func sbom(files map[string][]byte, info Info) ([]byte, error) {
	bom := cdxBOM{BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		Metadata: cdxMetadata{Component: cdxComponent{Type: "application", Name: info.SkillID, Version: info.Version,
			Publisher: info.Publisher}},
		Components: []cdxComponent{}}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if !isModule(p) && !isAsset(p) {
			continue
		}
		sum := sha256.Sum256(files[p])
		bom.Components = append(bom.Components, cdxComponent{Type: "file", Name: p,
			Hashes: []cdxHash{{Alg: "SHA-256", Content: hex.EncodeToString(sum[:])}}})
	}
	return json.MarshalIndent(bom, "", "  ")
}
