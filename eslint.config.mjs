// ESLint flat config: typescript-eslint with the type-aware rules that catch this codebase's real risks
// (a promise nobody awaits loses an error or a job; `any` and `!` hide unchecked data), plus the
// architecture rules: processes never import each other, shared/ never imports a process.
import { readdirSync } from "node:fs";
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const services = readdirSync(new URL("./services", import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

const noOtherService = (own) => ({
  files: [`services/${own}/**/*.ts`],
  rules: {
    "no-restricted-imports": [
      "error",
      {
        patterns: services
          .filter((name) => name !== own)
          .map((name) => ({
            group: [`**/services/${name}`, `**/services/${name}/**`],
            message: "Processes never import each other: they meet through shared/queues.",
          })),
      },
    ],
  },
});

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "dist.next/**",
      "dist.old/**",
      "node_modules/**",
      "test/sdk/**",
      "coverage/**",
      ".local/**",
      "**/*.js",
      "**/*.mjs",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      "no-console": "error",
    },
  },
  {
    files: ["shared/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["**/services/**"], message: "shared/ is used by every process and imports none of them." },
          ],
        },
      ],
    },
  },
  ...services.map(noOtherService),
  {
    // Command-line tools and benchmarks talk to a terminal; tests may print notes.
    files: ["scripts/**/*.ts", "bench/**/*.ts", "test/**/*.ts"],
    rules: { "no-console": "off" },
  },
  {
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-non-null-assertion": "off" },
  },
);
