import type { ConfigProperty } from "./config-property.js";

/**
 * The usage text of a program configured by `sections` (VOTER_CONFIG), made from the same
 * declaration that reads and validates the settings, so the two cannot drift apart: every setting
 * with its environment variable, what a valid value looks like and its default, or that it is required.
 */
export function configHelp(
  program: string,
  sections: Readonly<Record<string, readonly ConfigProperty[]>>,
): string {
  const lines = [
    `usage: ${program} [--config FILE] [--KeyLoad:Section:Property=VALUE ...]`,
    `       ${program} --help | --version`,
    "",
    'Settings, lowest precedence first: defaults, the JSON file ({"KeyLoad": {"Section": {"Property": value}}}),',
    "KeyLoad__Section__Property environment variables, then arguments; names are case-insensitive.",
  ];
  for (const [section, properties] of Object.entries(sections)) {
    lines.push("", `${section}:`);
    for (const p of properties) {
      const given = p.default === undefined ? "required" : `default ${JSON.stringify(p.default)}`;
      lines.push(`  KeyLoad:${section}:${p.name}  (KeyLoad__${section}__${p.name})`);
      if (p.deprecated === undefined) lines.push(`      ${p.expected}; ${given}`);
      else lines.push(`      deprecated, no effect: ${p.deprecated}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
