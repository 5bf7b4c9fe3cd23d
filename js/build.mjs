// Bundles src/widget.ts into one self-contained ESM file in ../ppviz/static (no CDN at run time).
import * as esbuild from "esbuild";

const options = {
  entryPoints: ["src/widget.ts"],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  outfile: "../ppviz/static/widget.js",
  legalComments: "none",
  logLevel: "info",
};

if (process.argv.includes("--watch")) {
  const ctx = await esbuild.context({ ...options, minify: false, sourcemap: "inline" });
  await ctx.watch();
} else {
  await esbuild.build(options);
}
