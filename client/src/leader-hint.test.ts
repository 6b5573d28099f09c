import { describe, expect, it } from "vitest";
import { parseLeaderHint } from "./leader-hint.js";

describe("parseLeaderHint", () => {
  it("reads the voter's structured-field dictionary", () => {
    expect(parseLeaderHint('id="voter2", url="http://127.0.0.1:7102"')).toEqual({
      id: "voter2",
      url: "http://127.0.0.1:7102",
    });
    expect(parseLeaderHint('url="http://h:1"')).toEqual({ id: undefined, url: "http://h:1" });
    expect(parseLeaderHint('id="voter3"')).toEqual({ id: "voter3", url: undefined });
  });

  it("unescapes strings and keeps commas inside them", () => {
    expect(parseLeaderHint('id="a\\"b,c\\\\", url="http://x/?a=1,2"')).toEqual({
      id: 'a"b,c\\',
      url: "http://x/?a=1,2",
    });
  });

  it("skips members it does not know and reads nothing from an empty or unreadable header", () => {
    expect(parseLeaderHint('term=4, id="voter1", url=?1')).toEqual({ id: "voter1", url: undefined });
    expect(parseLeaderHint(undefined)).toBeUndefined();
    expect(parseLeaderHint("")).toBeUndefined();
    expect(parseLeaderHint("garbage")).toBeUndefined();
  });
});
