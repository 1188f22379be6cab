import type { ServiceRow, ToolRow } from './api.js';
import { useRefreshOn } from './events.js';
import { formatAgo, useNow } from './format.js';
import { useLoader } from './use-loader.js';

function ServiceState({ service, now }: { service: ServiceRow; now: number }) {
  const state = service.state ?? 'unknown';
  return (
    <li className="service">
      <strong>{service.name}</strong> <span className={`badge service-${state}`}>{state}</span>
      {service.since !== undefined && <span className="muted"> since {formatAgo(service.since, now)}</span>}
      {service.protocolVersion !== undefined && <span className="muted"> · protocol {service.protocolVersion}</span>}
      {service.error !== undefined && <span className="error-text"> · {service.error}</span>}
    </li>
  );
}

function flagsOf(tool: ToolRow): string[] {
  return [
    ...(tool.longTask ? ['long task'] : []),
    ...(tool.disabled ? ['disabled'] : []),
    ...(tool.offered ? [] : ['not offered']),
  ];
}

/** Each profile's catalogue: what its clients see, each tool's class and why, and the services' health. */
export function ToolsPage() {
  const tools = useLoader((api) => api.tools(), 'tools');
  const now = useNow(5000);
  useRefreshOn(['service.state', 'tools.changed'], tools.reload);

  return (
    <section aria-labelledby="tools-title">
      <h1 id="tools-title">Tools</h1>
      {tools.error !== undefined && (
        <p className="error" role="alert">
          {tools.error}
        </p>
      )}
      {(tools.data?.problems ?? []).length > 0 && (
        <div className="card warn-card">
          <h2>Tools not offered</h2>
          <ul>
            {(tools.data?.problems ?? []).map((problem) => (
              <li key={`${problem.service}/${problem.tool}`}>
                <code>
                  {problem.service}/{problem.tool}
                </code>
                : {problem.problem}
              </li>
            ))}
          </ul>
        </div>
      )}
      {(tools.data?.profiles ?? []).map((profile) => (
        <section key={profile.name} className="profile" aria-labelledby={`profile-${profile.name}`}>
          <h2 id={`profile-${profile.name}`}>
            Profile {profile.name}{' '}
            <span className="badge badge-quiet">
              {profile.mode}
              {profile.readOnly ? ', read-only' : ''}
            </span>
          </h2>
          <ul className="services">
            {profile.services.map((service) => (
              <ServiceState key={service.name} service={service} now={now} />
            ))}
          </ul>
          {profile.tools.length === 0 ? (
            <p className="empty">No tools (are the profile's services up?).</p>
          ) : (
            <table className="table responsive tools">
              <thead>
                <tr>
                  <th scope="col">Tool</th>
                  <th scope="col">Class</th>
                  <th scope="col">Flags</th>
                  <th scope="col">Why this class</th>
                </tr>
              </thead>
              <tbody>
                {profile.tools.map((tool) => (
                  <tr key={tool.name} className={tool.offered ? undefined : 'not-offered'}>
                    <td data-label="Tool">
                      <code className="tool-name">{tool.name}</code>
                      {tool.description !== '' && <div className="muted tool-description">{tool.description}</div>}
                    </td>
                    <td data-label="Class">
                      <span className={`badge class-${tool.class}`}>{tool.class}</span>
                    </td>
                    <td data-label="Flags" className="flags">
                      {flagsOf(tool).join(', ') || '—'}
                    </td>
                    <td data-label="Why this class">{tool.reasons.join('; ')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      ))}
    </section>
  );
}
