export const SCENARIOS = {} as Record<string, { description: string }>;
export type ScenarioName = string;
export const scenarioPrograms = (_: string): string[] => [];
export async function plantScenario(..._a: unknown[]): Promise<void> {}
