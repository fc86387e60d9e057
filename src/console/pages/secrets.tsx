import { useState } from 'preact/hooks';
import { type ApiError, api, listAll } from '../api.js';
import { confirmRemove, FormDialog, type FormSpec, text } from '../form.js';
import { useLive, useNow } from '../live.js';
import { orgAdmin, roleAtLeast } from '../permissions.js';
import { useScope } from '../scope.js';
import type { SecretName } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle } from '../ui.js';

type Where = { realm_id: string } | { org_id: string };

/**
 * Secrets of the realm (its admins) and of the organization (owners and admins): names only. A value
 * is set through a password field and never shown, not even to whoever set it.
 */
export function SecretsPage() {
  const scope = useScope();
  const { realm, org } = scope;
  const [dialog, setDialog] = useState<FormSpec | null>(null);
  return (
    <>
      <PageTitle>Secrets</PageTitle>
      <p class="muted">
        Values agents get as environment variables. A realm's secret shadows the organization's of the same
        name. Values are never shown.
      </p>
      <FormDialog spec={dialog} onClose={() => setDialog(null)} />
      {realm ? (
        <SecretList
          title={`Realm ${realm.name}`}
          where={{ realm_id: realm.id }}
          manage={roleAtLeast(scope.role, 'admin')}
          who="realm admins"
          open={setDialog}
        />
      ) : null}
      {org ? (
        <SecretList
          title={`Organization ${org.display_name || org.slug}`}
          where={{ org_id: org.id }}
          manage={orgAdmin(scope.orgRole)}
          who="organization owners and admins"
          open={setDialog}
        />
      ) : null}
    </>
  );
}

function SecretList({
  title,
  where,
  manage,
  who,
  open,
}: {
  title: string;
  where: Where;
  manage: boolean;
  who: string;
  open: (spec: FormSpec) => void;
}) {
  const now = useNow(30_000);
  const key = 'realm_id' in where ? where.realm_id : where.org_id;
  const list = useLive(async () => listAll<'secrets/list', SecretName>('secrets/list', where), [key], 30_000);
  const form = (name: string | null): FormSpec => ({
    title: name ? `New value for ${name}` : `New secret in ${title}`,
    fields: [
      {
        name: 'name',
        label: 'Name',
        required: true,
        readOnly: name !== null,
        value: name ?? '',
        placeholder: 'API_KEY',
        help: name ? undefined : 'Capitals, digits and _, starting with a letter or _.',
      },
      {
        name: 'value',
        label: 'Value',
        type: 'password',
        required: true,
        help: 'Write-only: it is not shown again.',
      },
    ],
    submit: name ? 'Replace value' : 'Save secret',
    async onSubmit(v) {
      await api('secrets/set', {
        ...where,
        name: text(v.name),
        value: typeof v.value === 'string' ? v.value : '',
      });
      list.refresh();
      return undefined;
    },
  });
  const forbidden = (list.error as ApiError | null)?.code === 'forbidden';
  const id = `secrets-${key}`;
  return (
    <section aria-labelledby={id}>
      <div class="section-head">
        <h2 id={id}>{title}</h2>
        {manage && !forbidden ? (
          <button type="button" onClick={() => open(form(null))}>
            New secret
          </button>
        ) : null}
      </div>
      {forbidden ? (
        <p class="note">Only {who} see these secrets' names.</p>
      ) : (
        <ErrorNote error={list.error} what="Could not load the secrets" />
      )}
      {list.data?.length === 0 ? <Empty>No secrets.</Empty> : null}
      {list.data?.length ? (
        <div class="table-wrap">
          <table class="secrets wide">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Value</th>
                <th scope="col">Changed</th>
                {manage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {list.data.map((s) => (
                <tr key={s.name}>
                  <td>
                    <code>{s.name}</code>
                  </td>
                  <td class="muted">hidden</td>
                  <td>
                    <Ago at={s.updated_at} now={now} />
                  </td>
                  {manage ? (
                    <td class="actions">
                      <button
                        type="button"
                        onClick={() => open(form(s.name))}
                        aria-label={`Set a new value for ${s.name}`}
                      >
                        Set value
                      </button>
                      <button
                        type="button"
                        class="danger"
                        aria-label={`Remove secret ${s.name}`}
                        onClick={() =>
                          open(
                            confirmRemove(`secret ${s.name}`, async () => {
                              await api('secrets/remove', { ...where, name: s.name });
                              list.refresh();
                            }),
                          )
                        }
                      >
                        Remove
                      </button>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
