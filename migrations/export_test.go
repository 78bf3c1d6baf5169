package migrations

// Test hooks: run Migrate and read its status with other file sets.
var (
	RunWith        = run
	ReadStatusWith = readStatus
	LoadDefs       = loadDefinitions
	DefinitionFS   = definitionFiles
)
