"""STAND-IN agent: the Deployer (phase ``deploy``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real Deployer agent in ``coalmine.yaml``, e.g. a CLI agent
(``argv: ["claude", "-p"]``) or an ``openai`` provider agent with the Deployer's system prompt.

It reads the canary prompt on stdin and writes its answer on stdout.
"""

from __future__ import annotations

import sys

ANSWER = """\
# Deployment Plan: Orders API on Azure App Service (West Europe)

## Prerequisites

- An Azure subscription and a resource group `rg-orders-weu` in West Europe.
- An Entra ID app registration with a federated credential for this GitHub repository, so the
  pipeline signs in with OIDC and no client secret is stored anywhere.
- The Azure Container Registry and Key Vault below, created by the Bicep template.
- Key Vault secrets `database-url`, `stripe-secret-key` and `stripe-webhook-secret`, set once by
  an operator with `az keyvault secret set`.

## Infrastructure

Infrastructure is declared in Bicep (`infra/main.bicep`) and deployed from the pipeline, never
by hand in the portal.

```bicep
param location string = 'westeurope'
param acrName string = 'nwordersacr'
var secrets = 'https://kv-orders-weu.vault.azure.net/secrets'

resource plan 'Microsoft.Web/serverfarms@2023-12-01' = {
  name: 'plan-orders-weu'
  location: location
  sku: { name: 'P1v3', capacity: 2 }
  kind: 'linux'
  properties: { reserved: true }
}

resource app 'Microsoft.Web/sites@2023-12-01' = {
  name: 'app-orders-weu'
  location: location
  identity: { type: 'SystemAssigned' }   // managed identity
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    siteConfig: {
      linuxFxVersion: 'DOCKER|${acrName}.azurecr.io/orders-api:latest'
      acrUseManagedIdentityCreds: true
      healthCheckPath: '/healthz'
      appSettings: [
        { name: 'WEBSITES_PORT', value: '8000' }
        { name: 'DATABASE_URL', value: '@Microsoft.KeyVault(SecretUri=${secrets}/database-url/)' }
        { name: 'STRIPE_SECRET_KEY'
          value: '@Microsoft.KeyVault(SecretUri=${secrets}/stripe-secret-key/)' }
      ]
    }
  }
}

resource staging 'Microsoft.Web/sites/slots@2023-12-01' = {
  parent: app
  name: 'staging'               // the deployment slot for zero-downtime releases
  location: location
  identity: { type: 'SystemAssigned' }
  properties: { serverFarmId: plan.id }
}
```

The same file creates the Container Registry (`AcrPull` granted to both slot identities), the
Key Vault (`Key Vault Secrets User` granted to both slot identities) and Application Insights.

## Pipeline

`.github/workflows/deploy.yml`: build, push to the Container Registry, deploy to the staging
slot, smoke test `/healthz`, then swap into production.

```yaml
name: deploy
on:
  push:
    branches: [main]
permissions:
  id-token: write   # OIDC federated credentials, no stored secret
  contents: read
jobs:
  deploy:
    runs-on: ubuntu-latest
    environment: production
    steps:
      - uses: actions/checkout@v4
      - uses: azure/login@v2
        with:
          client-id: ${{ vars.AZURE_CLIENT_ID }}
          tenant-id: ${{ vars.AZURE_TENANT_ID }}
          subscription-id: ${{ vars.AZURE_SUBSCRIPTION_ID }}
      - run: az deployment group create -g rg-orders-weu -f infra/main.bicep
      - run: |
          az acr login --name nwordersacr
          docker build -t nwordersacr.azurecr.io/orders-api:${{ github.sha }} .
          docker push nwordersacr.azurecr.io/orders-api:${{ github.sha }}
      - uses: azure/webapps-deploy@v3
        with:
          app-name: app-orders-weu
          slot-name: staging
          images: nwordersacr.azurecr.io/orders-api:${{ github.sha }}
      - name: Smoke test the staging slot
        run: >-
          curl --fail --retry 10 --retry-delay 6
          https://app-orders-weu-staging.azurewebsites.net/healthz
      - name: Swap staging into production
        run: >-
          az webapp deployment slot swap -g rg-orders-weu -n app-orders-weu
          --slot staging --target-slot production
```

Releases go to the staging slot, pass the smoke test, then swap into production: the swap warms
the new instances first, so there is zero downtime.

## Rollback

1. Swap back: `az webapp deployment slot swap -g rg-orders-weu -n app-orders-weu --slot
   staging --target-slot production`. The previous version is still warm in the staging slot,
   so the rollback completes within minutes (usually under two).
2. Confirm `/healthz` and the error rate in Application Insights.
3. If a database migration shipped with the release, run the matching `alembic downgrade`
   only when the migration was not backward compatible (our rule: migrations are additive).

## Monitoring

- Application Insights with the OpenTelemetry distro: request rate, p95 latency, failures and
  dependency calls to PostgreSQL and Stripe.
- Alerts: HTTP 5xx above 1% for 5 minutes, p95 latency above 800 ms, failed health checks.
- An availability test pinging `/healthz` from three Azure regions every 5 minutes.
"""


def main() -> None:
    sys.stdin.read()  # the prompt; a real agent would act on it
    sys.stdout.write(ANSWER)


if __name__ == "__main__":
    main()
