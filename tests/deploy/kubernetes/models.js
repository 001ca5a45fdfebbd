// models.js: the module of the kubernetes-models packages that defines an apiVersion/kind.
"use strict";
function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (!/^[A-Za-z0-9.]*$/.test(group) || !/^[a-z0-9]+$/.test(version) || !/^[A-Za-z]+$/.test(kind)) {
    throw new Error(`not an apiVersion/kind: ${apiVersion} ${kind}`);
  }
  if (group === "monitoring.coreos.com") {
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  }
  return group === "" ? `kubernetes-models/${version}/${kind}` : `kubernetes-models/${group}/${version}/${kind}`;
}
module.exports = { modelFor };
