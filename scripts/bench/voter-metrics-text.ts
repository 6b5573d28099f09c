/** A voter's `/metrics` text, asked with an API key of any role: every public route but health needs one. */
export async function voterMetricsText(httpUrl: string, apiKey: string): Promise<string> {
  const response = await fetch(`${httpUrl}/metrics`, {
    headers: { authorization: `Bearer ${apiKey}` },
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`${httpUrl}/metrics answered ${response.status}`);
  return response.text();
}
