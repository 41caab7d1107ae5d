package jobdecider

// Version is this module's version, released as the tag clients/go/v<Version>
// (CHANGELOG.md): v0.MINOR.PATCH while the contract is jobdecider.v1.
const Version = "0.26.0"
