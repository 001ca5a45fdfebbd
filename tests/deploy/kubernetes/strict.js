// strict.js: writes a TypeScript file that declares every object with the model's
// interface (IStatefulSet, IPodMonitor, ...) from the same packages, so that `tsc --noEmit`
// rejects fields the API does not have (excess property checks), as `kubectl apply
// --validate=strict` does; the ajv schemas of validate.js accept unknown fields.
//
// stdin: the JSON array validate.js reads; argv[2]: the .ts file to write.
"use strict";
const fs = require("fs");
const { modelFor } = require("./models.js");
const objects = JSON.parse(fs.readFileSync(0, "utf8"));
const lines = [];
objects.forEach(({ source, doc }, i) => {
  const path = modelFor(doc.apiVersion, doc.kind);
  lines.push(`import { I${doc.kind} as T${i} } from ${JSON.stringify(path)};`);
  lines.push(`// ${source}: ${doc.kind}/${doc.metadata.name}`);
  lines.push(`export const o${i}: T${i} = ${JSON.stringify(doc, null, 2)};`);
});
fs.writeFileSync(process.argv[2], lines.join("\n") + "\n");
