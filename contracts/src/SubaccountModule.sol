// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice The part of a Safe (1.4.1 / 1.5.0) a module uses.
interface ISafeModuleTarget {
    function execTransactionFromModuleReturnData(address to, uint256 value, bytes calldata data, uint8 operation)
        external
        returns (bool success, bytes memory returnData);
}

/**
 * @notice The only module of a subaccount Safe. Governance (OWNER) decides which tokens the
 * subaccount may hold and approve, and which (target, selector) calls it may make; the strategist
 * (TRADER) and the service's relayer key (RELAYER) operate within those lists. Funds never leave
 * the Safe except back to the vault: every recipient argument of a known call must be the Safe.
 *
 * Every call goes through `execTransactionFromModuleReturnData` and a failed inner call reverts
 * with the inner revert data, so gas estimates, simulations and revert reasons are those of the
 * protocol called (a Safe's plain `execTransactionFromModule` returns false and "succeeds").
 */
contract SubaccountModule {
    // ---- roles ----------------------------------------------------------------------------
    bytes32 public constant OWNER = keccak256("OWNER");
    bytes32 public constant TRADER = keccak256("TRADER");
    bytes32 public constant RELAYER = keccak256("RELAYER");

    // ---- selectors with a recipient (or token) argument the module checks ------------------
    // ERC-20 calls never go through `execute`: approvals only through `approve`, transfers never.
    bytes4 internal constant ERC20_APPROVE = 0x095ea7b3; // approve(address,uint256)
    bytes4 internal constant ERC20_TRANSFER = 0xa9059cbb; // transfer(address,uint256)
    bytes4 internal constant ERC20_TRANSFER_FROM = 0x23b872dd; // transferFrom(address,address,uint256)
    bytes4 internal constant ERC20_INCREASE_ALLOWANCE = 0x39509351; // increaseAllowance(address,uint256)
    // ERC-721: a position NFT may only move to an allowed target (e.g. the v3 staker).
    bytes4 internal constant ERC721_SAFE_TRANSFER_FROM = 0x42842e0e; // safeTransferFrom(address,address,uint256)
    bytes4 internal constant ERC721_SAFE_TRANSFER_FROM_DATA = 0xb88d4fde; // ...(address,address,uint256,bytes)
    // Uniswap v3 SwapRouter
    bytes4 internal constant EXACT_INPUT_SINGLE = 0x414bf389;
    bytes4 internal constant EXACT_INPUT = 0xc04b8d59;
    bytes4 internal constant EXACT_OUTPUT_SINGLE = 0xdb3e2198;
    bytes4 internal constant EXACT_OUTPUT = 0xf28c0498;
    // Uniswap v2 Router02: swapExactTokensForTokens(uint256,uint256,address[],address,uint256)
    bytes4 internal constant V2_SWAP_EXACT_TOKENS = 0x38ed1739;
    // ...and swapTokensForExactTokens(uint256 amountOut,uint256 amountInMax,address[],address,uint256)
    bytes4 internal constant V2_SWAP_FOR_EXACT_TOKENS = 0x8803dbee;
    // Uniswap v3 NonfungiblePositionManager
    bytes4 internal constant NPM_MINT = 0x88316456;
    bytes4 internal constant NPM_COLLECT = 0xfc6f7865;
    // Uniswap v3 staker
    bytes4 internal constant STAKER_CLAIM_REWARD = 0x2f2d783d; // claimReward(address,address,uint256)
    bytes4 internal constant STAKER_WITHDRAW_TOKEN = 0x3c423f0b; // withdrawToken(uint256,address,bytes)
    // Aave v3 Pool
    bytes4 internal constant AAVE_SUPPLY = 0x617ba037; // supply(address,uint256,address,uint16)
    bytes4 internal constant AAVE_BORROW = 0xa415bcad; // borrow(address,uint256,uint256,uint16,address)
    bytes4 internal constant AAVE_REPAY = 0x573ade81; // repay(address,uint256,uint256,address)
    bytes4 internal constant AAVE_WITHDRAW = 0x69328dec; // withdraw(address,uint256,address)
    // Morpho Blue (market params are the first five words of each)
    bytes4 internal constant MORPHO_SUPPLY = 0xa99aad89; // supply(MarketParams,uint256,uint256,address,bytes)
    bytes4 internal constant MORPHO_WITHDRAW = 0x5c2bea49; // withdraw(MarketParams,uint256,uint256,address,address)
    bytes4 internal constant MORPHO_BORROW = 0x50d8cd4b; // borrow(MarketParams,uint256,uint256,address,address)
    bytes4 internal constant MORPHO_REPAY = 0x20b76e81; // repay(MarketParams,uint256,uint256,address,bytes)
    bytes4 internal constant MORPHO_SUPPLY_COLLATERAL = 0x238d6579; // supplyCollateral(MP,uint256,address,bytes)
    bytes4 internal constant MORPHO_WITHDRAW_COLLATERAL = 0x8720316d; // withdrawCollateral(MP,uint256,address,address)
    // ERC-4626 vaults (the lending vault)
    bytes4 internal constant ERC4626_DEPOSIT = 0x6e553f65; // deposit(uint256,address)
    bytes4 internal constant ERC4626_MINT = 0x94bf804d; // mint(uint256,address)
    bytes4 internal constant ERC4626_WITHDRAW = 0xb460af94; // withdraw(uint256,address,address)
    bytes4 internal constant ERC4626_REDEEM = 0xba087652; // redeem(uint256,address,address)

    struct ExactInputSingleParams {
        address tokenIn;
        address tokenOut;
        uint24 fee;
        address recipient;
        uint256 deadline;
        uint256 amountIn;
        uint256 amountOutMinimum;
        uint160 sqrtPriceLimitX96;
    }

    struct ExactInputParams {
        bytes path;
        address recipient;
        uint256 deadline;
        uint256 amountIn;
        uint256 amountOutMinimum;
    }

    struct MintParams {
        address token0;
        address token1;
        uint24 fee;
        int24 tickLower;
        int24 tickUpper;
        uint256 amount0Desired;
        uint256 amount1Desired;
        uint256 amount0Min;
        uint256 amount1Min;
        address recipient;
        uint256 deadline;
    }

    struct CollectParams {
        uint256 tokenId;
        address recipient;
        uint128 amount0Max;
        uint128 amount1Max;
    }

    struct MorphoParams {
        address loanToken;
        address collateralToken;
        address oracle;
        address irm;
        uint256 lltv;
    }

    struct Approval {
        address token;
        address spender;
        uint256 amount;
    }

    struct Call {
        address target;
        uint256 value;
        bytes data;
    }

    address public immutable safe;
    /// @notice where `withdrawToVault` sends funds (the vault that owns the subaccount)
    address public vault;

    mapping(bytes32 role => mapping(address account => bool)) public hasRole;
    mapping(address token => bool) public tokenAllowed;
    mapping(address target => mapping(bytes4 selector => bool)) public callAllowed;
    /// @notice how many selectors of a target are allowed: a target with any is a valid spender
    mapping(address target => uint256) public allowedSelectorCount;

    event RoleGranted(bytes32 indexed role, address indexed account, address indexed sender);
    event RoleRevoked(bytes32 indexed role, address indexed account, address indexed sender);
    event TokenAllowanceSet(address indexed token, bool allowed);
    event CallAllowanceSet(address indexed target, bytes4 indexed selector, bool allowed);
    event VaultSet(address indexed vault);
    event Executed(address indexed operator, address indexed target, bytes4 indexed selector, uint256 value);
    event ApprovalSet(address indexed token, address indexed spender, uint256 amount);
    event WithdrawnToVault(address indexed token, address indexed vault, uint256 amount);

    error NotOwner(address account);
    error NotTrader(address account);
    error TokenNotAllowed(address token);
    error TargetNotAllowed(address target, bytes4 selector);
    error ForbiddenSelector(bytes4 selector);
    error ExternalRecipient(address recipient);
    error SlippageExceeded(uint256 received, uint256 minimum);
    error LeftoverApproval(address token, address spender, uint256 allowance);
    error ModuleCallFailed(address target);
    error InvalidPath();
    /// A batch that mints a position moved another position NFT after the mint (see executeBatch)
    error UnexpectedPosition(uint256 minted, uint256 moved);
    /// An `executeExpecting` call returned another result than the one it was built for
    error UnexpectedResult(bytes returned, bytes expected);
    error ZeroAddress();

    modifier onlyOwner() {
        if (!hasRole[OWNER][msg.sender]) revert NotOwner(msg.sender);
        _;
    }

    /// TRADER or RELAYER: the relayer submits what the strategist decided.
    modifier onlyTrader() {
        if (!hasRole[TRADER][msg.sender] && !hasRole[RELAYER][msg.sender]) revert NotTrader(msg.sender);
        _;
    }

    constructor(address safe_, address owner_) {
        if (safe_ == address(0) || owner_ == address(0)) revert ZeroAddress();
        safe = safe_;
        _grant(OWNER, owner_);
    }

    // ---- governance -----------------------------------------------------------------------

    function grantRole(bytes32 role, address account) external onlyOwner {
        _grant(role, account);
    }

    function revokeRole(bytes32 role, address account) external onlyOwner {
        if (hasRole[role][account]) {
            hasRole[role][account] = false;
            emit RoleRevoked(role, account, msg.sender);
        }
    }

    function setVault(address vault_) external onlyOwner {
        vault = vault_;
        emit VaultSet(vault_);
    }

    function setTokens(address[] calldata tokens, bool allowed) external onlyOwner {
        for (uint256 i = 0; i < tokens.length; i++) {
            if (tokens[i] == address(0)) revert ZeroAddress();
            tokenAllowed[tokens[i]] = allowed;
            emit TokenAllowanceSet(tokens[i], allowed);
        }
    }

    function setCalls(address target, bytes4[] calldata selectors, bool allowed) external onlyOwner {
        if (target == address(0)) revert ZeroAddress();
        for (uint256 i = 0; i < selectors.length; i++) {
            bytes4 sel = selectors[i];
            if (_isErc20Spend(sel)) revert ForbiddenSelector(sel);
            if (callAllowed[target][sel] != allowed) {
                callAllowed[target][sel] = allowed;
                if (allowed) allowedSelectorCount[target]++;
                else allowedSelectorCount[target]--;
            }
            emit CallAllowanceSet(target, sel, allowed);
        }
    }

    // ---- operation ------------------------------------------------------------------------

    /// @notice One allowed call from the Safe; reverts with the inner reason when it fails.
    function execute(address target, uint256 value, bytes calldata data)
        external
        onlyTrader
        returns (bytes memory result)
    {
        return _execute(target, value, data);
    }

    /// @notice Exact approvals for one call, reset to 0 once it is done (nothing lingers).
    function executeWithApprovals(Approval[] calldata approvals, address target, uint256 value, bytes calldata data)
        external
        onlyTrader
        returns (bytes memory result)
    {
        return _executeWithApprovals(approvals, target, value, data);
    }

    /**
     * @notice `executeWithApprovals`, and the call must return exactly `expected`, else the whole
     * transaction reverts (`UnexpectedResult`). It pins what a builder promised from the state it
     * read: a bridge deposit's core hash depends on the deposits of the Safe mined before it.
     */
    function executeExpecting(
        Approval[] calldata approvals,
        address target,
        uint256 value,
        bytes calldata data,
        bytes calldata expected
    ) external onlyTrader returns (bytes memory result) {
        result = _executeWithApprovals(approvals, target, value, data);
        if (keccak256(result) != keccak256(expected)) revert UnexpectedResult(result, expected);
    }

    /**
     * @notice Several allowed calls in one transaction (a range move: decrease, collect, mint),
     * with exact approvals for all of them, reset to 0 once the last one is done. Each call is
     * checked as `execute` checks it; any failure reverts the whole batch with its reason.
     */
    function executeBatch(Approval[] calldata approvals, Call[] calldata calls)
        external
        onlyTrader
        returns (bytes[] memory results)
    {
        for (uint256 i = 0; i < approvals.length; i++) {
            _approve(approvals[i].token, approvals[i].spender, approvals[i].amount);
        }
        results = new bytes[](calls.length);
        // A position NFT moved after a mint in the same batch must be the one minted: its id is
        // fixed when the batch is built (a rebalance's restake), and a mint of this Safe landing
        // first would otherwise have the batch stake that other position and leave its own out.
        bool minted;
        uint256 mintedId;
        for (uint256 i = 0; i < calls.length; i++) {
            bytes calldata data = calls[i].data;
            bytes4 sel = data.length >= 4 ? bytes4(data[:4]) : bytes4(0);
            if (minted && (sel == ERC721_SAFE_TRANSFER_FROM || sel == ERC721_SAFE_TRANSFER_FROM_DATA)) {
                (,, uint256 moved) = abi.decode(data[4:], (address, address, uint256));
                if (moved != mintedId) revert UnexpectedPosition(mintedId, moved);
            }
            results[i] = _execute(calls[i].target, calls[i].value, data);
            if (sel == NPM_MINT) {
                minted = true;
                mintedId = abi.decode(results[i], (uint256));
            }
        }
        for (uint256 i = 0; i < approvals.length; i++) {
            if (_allowance(approvals[i].token, approvals[i].spender) != 0) {
                _approve(approvals[i].token, approvals[i].spender, 0);
            }
        }
    }

    /**
     * @notice An exact approval of an allowed token to an allowed target. A non-zero approval is
     * refused while an earlier one is unspent (`LeftoverApproval`): approve 0 first.
     */
    function approve(address token, address spender, uint256 amount) external onlyTrader {
        _approve(token, spender, amount);
    }

    /// @notice Moves funds back to the vault, the only recipient other than the Safe.
    function withdrawToVault(address token, uint256 amount) external onlyTrader {
        address v = vault;
        if (v == address(0)) revert ZeroAddress();
        if (!tokenAllowed[token]) revert TokenNotAllowed(token);
        _call(token, 0, abi.encodeWithSelector(ERC20_TRANSFER, v, amount), true);
        emit WithdrawnToVault(token, v, amount);
    }

    // ---- internals ------------------------------------------------------------------------

    function _grant(bytes32 role, address account) internal {
        if (account == address(0)) revert ZeroAddress();
        if (!hasRole[role][account]) {
            hasRole[role][account] = true;
            emit RoleGranted(role, account, msg.sender);
        }
    }

    function _executeWithApprovals(
        Approval[] calldata approvals,
        address target,
        uint256 value,
        bytes calldata data
    ) internal returns (bytes memory result) {
        for (uint256 i = 0; i < approvals.length; i++) {
            _approve(approvals[i].token, approvals[i].spender, approvals[i].amount);
        }
        result = _execute(target, value, data);
        for (uint256 i = 0; i < approvals.length; i++) {
            if (_allowance(approvals[i].token, approvals[i].spender) != 0) {
                _approve(approvals[i].token, approvals[i].spender, 0);
            }
        }
    }

    function _execute(address target, uint256 value, bytes calldata data) internal returns (bytes memory result) {
        bytes4 sel = data.length >= 4 ? bytes4(data[:4]) : bytes4(0);
        if (_isErc20Spend(sel)) revert ForbiddenSelector(sel);
        if (!callAllowed[target][sel]) revert TargetNotAllowed(target, sel);
        (address tokenOut, uint256 minOut) = _check(sel, data);
        uint256 before = tokenOut == address(0) ? 0 : _balance(tokenOut);
        result = _call(target, value, data, false);
        if (tokenOut != address(0)) {
            uint256 afterwards = _balance(tokenOut);
            uint256 received = afterwards > before ? afterwards - before : 0;
            if (received < minOut) revert SlippageExceeded(received, minOut);
        }
        emit Executed(msg.sender, target, sel, value);
    }

    /// Checks the recipient and token arguments of the calls we know; for exact-input swaps also
    /// hands back the token bought and its minimum, checked again on the Safe's balance.
    function _check(bytes4 sel, bytes calldata data) internal view returns (address tokenOut, uint256 minOut) {
        bytes calldata args = data[4:];
        if (sel == EXACT_INPUT_SINGLE || sel == EXACT_OUTPUT_SINGLE) {
            // both single-hop structs start (tokenIn, tokenOut, fee, recipient)
            (address tokenIn, address out,, address recipient) = abi.decode(args, (address, address, uint24, address));
            _token(tokenIn);
            _token(out);
            _recipient(recipient);
            if (sel == EXACT_INPUT_SINGLE) {
                ExactInputSingleParams memory p = abi.decode(args, (ExactInputSingleParams));
                return (out, p.amountOutMinimum);
            }
        } else if (sel == EXACT_INPUT || sel == EXACT_OUTPUT) {
            // both multi-hop structs are (bytes path, address recipient, uint256, uint256, uint256)
            ExactInputParams memory p = abi.decode(args, (ExactInputParams));
            _recipient(p.recipient);
            (address first, address last) = _pathTokens(p.path);
            // a circular path spends what it buys: the router's own minimum check is the only one
            if (sel == EXACT_INPUT && first != last) return (last, p.amountOutMinimum);
        } else if (sel == V2_SWAP_EXACT_TOKENS || sel == V2_SWAP_FOR_EXACT_TOKENS) {
            // both are (uint256, uint256, address[] path, address to, uint256 deadline)
            (, uint256 second, address[] memory path, address to) =
                abi.decode(args, (uint256, uint256, address[], address));
            if (path.length < 2) revert InvalidPath();
            for (uint256 i = 0; i < path.length; i++) {
                _token(path[i]);
            }
            _recipient(to);
            // exact input: the second word is the minimum out (a circular path: the router's check)
            address last = path[path.length - 1];
            if (sel == V2_SWAP_EXACT_TOKENS && path[0] != last) return (last, second);
        } else if (sel == NPM_MINT) {
            MintParams memory p = abi.decode(args, (MintParams));
            _token(p.token0);
            _token(p.token1);
            _recipient(p.recipient);
        } else if (sel == NPM_COLLECT) {
            CollectParams memory p = abi.decode(args, (CollectParams));
            _recipient(p.recipient);
        } else if (sel == ERC721_SAFE_TRANSFER_FROM || sel == ERC721_SAFE_TRANSFER_FROM_DATA) {
            (address from, address to) = abi.decode(args, (address, address));
            _recipient(from);
            if (allowedSelectorCount[to] == 0) revert ExternalRecipient(to);
        } else if (sel == STAKER_CLAIM_REWARD) {
            (address rewardToken, address to) = abi.decode(args, (address, address));
            _token(rewardToken);
            _recipient(to);
        } else if (sel == STAKER_WITHDRAW_TOKEN) {
            (, address to) = abi.decode(args, (uint256, address));
            _recipient(to);
        } else if (sel == AAVE_SUPPLY) {
            (address asset,, address onBehalfOf) = abi.decode(args, (address, uint256, address));
            _token(asset);
            _recipient(onBehalfOf);
        } else if (sel == AAVE_BORROW) {
            (address asset,,,, address onBehalfOf) = abi.decode(args, (address, uint256, uint256, uint16, address));
            _token(asset);
            _recipient(onBehalfOf);
        } else if (sel == AAVE_REPAY) {
            (address asset,,, address onBehalfOf) = abi.decode(args, (address, uint256, uint256, address));
            _token(asset);
            _recipient(onBehalfOf);
        } else if (sel == AAVE_WITHDRAW) {
            (address asset,, address to) = abi.decode(args, (address, uint256, address));
            _token(asset);
            _recipient(to);
        } else if (sel == MORPHO_SUPPLY || sel == MORPHO_REPAY) {
            (MorphoParams memory m,,, address onBehalf) = abi.decode(args, (MorphoParams, uint256, uint256, address));
            _morphoTokens(m);
            _recipient(onBehalf);
        } else if (sel == MORPHO_WITHDRAW || sel == MORPHO_BORROW) {
            (MorphoParams memory m,,, address onBehalf, address receiver) =
                abi.decode(args, (MorphoParams, uint256, uint256, address, address));
            _morphoTokens(m);
            _recipient(onBehalf);
            _recipient(receiver);
        } else if (sel == MORPHO_SUPPLY_COLLATERAL) {
            (MorphoParams memory m,, address onBehalf) = abi.decode(args, (MorphoParams, uint256, address));
            _morphoTokens(m);
            _recipient(onBehalf);
        } else if (sel == MORPHO_WITHDRAW_COLLATERAL) {
            (MorphoParams memory m,, address onBehalf, address receiver) =
                abi.decode(args, (MorphoParams, uint256, address, address));
            _morphoTokens(m);
            _recipient(onBehalf);
            _recipient(receiver);
        } else if (sel == ERC4626_DEPOSIT || sel == ERC4626_MINT) {
            (, address receiver) = abi.decode(args, (uint256, address));
            _recipient(receiver);
        } else if (sel == ERC4626_WITHDRAW || sel == ERC4626_REDEEM) {
            (, address receiver, address owner) = abi.decode(args, (uint256, address, address));
            _recipient(receiver);
            _recipient(owner);
        }
    }

    /// Every token of a v3 path (token, fee, token, fee, ..., token) must be allowed; returns the ends.
    function _pathTokens(bytes memory path) internal view returns (address first, address last) {
        if (path.length < 43 || (path.length - 20) % 23 != 0) revert InvalidPath();
        for (uint256 off = 0; off < path.length; off += 23) {
            address t;
            assembly {
                t := shr(96, mload(add(add(path, 32), off)))
            }
            _token(t);
            if (off == 0) first = t;
            last = t;
        }
    }

    function _morphoTokens(MorphoParams memory m) internal view {
        _token(m.loanToken);
        _token(m.collateralToken);
    }

    function _token(address token) internal view {
        if (!tokenAllowed[token]) revert TokenNotAllowed(token);
    }

    function _recipient(address recipient) internal view {
        if (recipient != safe) revert ExternalRecipient(recipient);
    }

    function _isErc20Spend(bytes4 sel) internal pure returns (bool) {
        return sel == ERC20_APPROVE || sel == ERC20_TRANSFER || sel == ERC20_TRANSFER_FROM
            || sel == ERC20_INCREASE_ALLOWANCE;
    }

    function _approve(address token, address spender, uint256 amount) internal {
        _token(token);
        if (allowedSelectorCount[spender] == 0) revert TargetNotAllowed(spender, ERC20_APPROVE);
        if (amount != 0) {
            uint256 current = _allowance(token, spender);
            if (current != 0) revert LeftoverApproval(token, spender, current);
        }
        _call(token, 0, abi.encodeWithSelector(ERC20_APPROVE, spender, amount), true);
        emit ApprovalSet(token, spender, amount);
    }

    /// Runs a call as the Safe; a failed call reverts with its own revert data.
    function _call(address target, uint256 value, bytes memory data, bool erc20)
        internal
        returns (bytes memory ret)
    {
        bool ok;
        (ok, ret) = ISafeModuleTarget(safe).execTransactionFromModuleReturnData(target, value, data, 0);
        if (!ok) {
            if (ret.length == 0) revert ModuleCallFailed(target);
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        // ERC-20s that return nothing are fine; one that returns false is a failure.
        if (erc20 && ret.length > 0 && !abi.decode(ret, (bool))) revert ModuleCallFailed(target);
    }

    function _balance(address token) internal view returns (uint256) {
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSelector(0x70a08231, safe));
        return ok && ret.length >= 32 ? abi.decode(ret, (uint256)) : 0;
    }

    function _allowance(address token, address spender) internal view returns (uint256) {
        (bool ok, bytes memory ret) = token.staticcall(abi.encodeWithSelector(0xdd62ed3e, safe, spender));
        return ok && ret.length >= 32 ? abi.decode(ret, (uint256)) : 0;
    }
}
