// validate.js: validates Kubernetes objects against the API schemas of the
// kubernetes-models packages (Kubernetes 1.27 OpenAPI schemas, and the Prometheus Operator
// CRDs' schemas for monitoring.coreos.com), compiled into ajv validators inside the
// packages: nothing is fetched at run time.
//
// stdin: a JSON array of {source, doc}; prints one line per object, exits 1 if any object
// fails (a type, a required field, an enum, a pattern or a format) or has a kind no
// package knows.
"use strict";
const fs = require("fs");

const { modelFor } = require("./models.js");

const objects = JSON.parse(fs.readFileSync(0, "utf8"));
let failed = 0;
for (const { source, doc } of objects) {
  const what = `${source}: ${doc.kind}/${doc.metadata && doc.metadata.name}`;
  let Model;
  try {
    const path = modelFor(doc.apiVersion, doc.kind);
    Model = require(path)[doc.kind];
    if (typeof Model !== "function") throw new Error(`${path} has no ${doc.kind}`);
  } catch (e) {
    console.log(`FAIL ${what}: no schema for ${doc.apiVersion} ${doc.kind} (${e.message.split("\n")[0]})`);
    failed++;
    continue;
  }
  try {
    new Model(doc).validate();
    console.log(`ok   ${what} (${doc.apiVersion})`);
  } catch (e) {
    console.log(`FAIL ${what}: ${e.message}`);
    failed++;
  }
}
if (objects.length === 0) {
  console.log("FAIL no objects");
  failed++;
}
process.exit(failed ? 1 : 0);
