package rows

// CallerKeyPrefix starts every caller API key.
const CallerKeyPrefix = "sy-"
