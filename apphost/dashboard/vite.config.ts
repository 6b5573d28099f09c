import { defineConfig } from "vite";

// Built into dist/ beside this file, which the AppHost serves (apphost/src/dashboard-assets.ts).
// Relative URLs, so the page works on whatever port the AppHost picks.
export default defineConfig({
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
});
