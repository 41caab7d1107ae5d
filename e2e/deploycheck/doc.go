// Package deploycheck holds the checks of deploy/ that need no cluster: the
// Helm chart against the kustomize overlays, the values schema, the rules
// every manifest keeps (images, security contexts, the memory arithmetic),
// and the Dockerfiles' rules. The API server's dry run of the same objects
// is e2e/tests' TestDeployManifestsDryRun.
package deploycheck
