// Preloaded (NODE_OPTIONS=--require) into every process and worker thread of the Node 24 suites
// (node24-suites.mjs): better-sqlite3's addon in node_modules is built for the workspace's Node, so its
// loads go to the copy built against Node 24's headers instead. Only a Node of that copy's ABI is
// redirected (a Node 20 child started by name keeps its own build), and no other addon is touched.
"use strict";
const { basename } = require("node:path");

const addon = process.env.KEYLOAD_BETTER_SQLITE3_ADDON;
if (addon && process.versions.modules === process.env.KEYLOAD_BETTER_SQLITE3_ABI) {
  const dlopen = process.dlopen;
  process.dlopen = function dlopenBuiltForThisNode(module, filename, ...rest) {
    const target = basename(filename) === "better_sqlite3.node" ? addon : filename;
    return dlopen.call(this, module, target, ...rest);
  };
}
