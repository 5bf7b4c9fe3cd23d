// Vite's `?url` imports (used by the tests to fetch the golden wire fixture).
declare module "*?url" {
  const url: string;
  export default url;
}
