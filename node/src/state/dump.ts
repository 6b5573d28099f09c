import type Database from "better-sqlite3";

/**
 * A canonical text of every table of the state database: tables by name, rows sorted by all their
 * columns, one JSON array per row, blobs as hex. Two databases with the same logical state dump to the
 * same string, whatever their page layout.
 */
export function dumpDatabase(db: Database.Database): string {
  const tables = db
    .prepare<[], { name: string }>(
      "SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .all()
    .map((row) => row.name);
  const out: string[] = [];
  for (const table of tables) {
    const columns = db
      .prepare<[string], { name: string }>("SELECT name FROM pragma_table_info(?)")
      .all(table);
    const order = columns.map((_, i) => i + 1).join(", ");
    out.push(`# ${table} (${columns.map((c) => c.name).join(", ")})`);
    const rows = db.prepare(`SELECT * FROM main."${table.replaceAll('"', '""')}" ORDER BY ${order}`).raw();
    for (const row of rows.iterate() as Iterable<unknown[]>) {
      out.push(
        JSON.stringify(row.map((value) => (Buffer.isBuffer(value) ? `x'${value.toString("hex")}'` : value))),
      );
    }
  }
  return `${out.join("\n")}\n`;
}
