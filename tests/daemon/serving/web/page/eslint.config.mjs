// ESLint's recommended rules for the page's script, a classic browser script (not a module):
// its top-level names are the page's, and it runs in the browsers the page supports.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: globals.browser,
    },
    rules: {
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-var": "error",
      "prefer-const": "error",
      strict: ["error", "global"],
    },
  },
];
