import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { test } from "node:test";
import { MIGRATIONS } from "../../src/store/migration-list.js";
import { MIGRATION_NAMES } from "../../src/store/migration-names.js";
import { MIGRATIONS_DIR } from "../../src/store/orm-config.js";

test("the migration list names every migration file in the migrations directory, in order", async () => {
  const files = (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith(".ts")).map((name) => name.slice(0, -3)).sort();
  assert.deepEqual(MIGRATIONS.map((m) => m.name), files);
});

test("each listed migration's class has the name the list stores it under", () => {
  for (const migration of MIGRATIONS) assert.equal(migration.class.name, migration.name);
});

test("the list of migration names is the migration list's names, in order", () => {
  assert.deepEqual(MIGRATION_NAMES, MIGRATIONS.map((m) => m.name));
});
